package vfs

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Op names an I/O operation, for fault rules (Faulty), call counters and
// sync hooks (Sim.OnSync).
type Op string

// Operations. OpRead covers File.Read and File.ReadAt; OpStat is File.Stat.
const (
	OpOpen            Op = "open"
	OpRead            Op = "read"
	OpWrite           Op = "write"
	OpSync            Op = "sync"
	OpDatasync        Op = "datasync"
	OpTruncate        Op = "truncate"
	OpStat            Op = "stat"
	OpClose           Op = "close"
	OpMkdir           Op = "mkdir"
	OpRename          Op = "rename"
	OpRenameNoReplace Op = "renamenoreplace"
	OpLink            Op = "link"
	OpRemove          Op = "remove"
	OpRemoveAll       Op = "removeall"
	OpLstat           Op = "lstat"
	OpReadDir         Op = "readdir"
	OpSyncDir         Op = "syncdir"
	OpSyncAll         Op = "syncall"

	// OpAnySync matches OpSync, OpDatasync, OpSyncDir and OpSyncAll in a Fault and in
	// Calls, so a test can address "the k-th sync point of any kind".
	OpAnySync Op = "anysync"
)

func (o Op) matches(op Op) bool {
	if o == OpAnySync {
		return op == OpSync || op == OpDatasync || op == OpSyncDir || op == OpSyncAll
	}
	return o == op
}

// Fault is a rule for Faulty: the matching calls it fires on fail (or lie)
// instead of reaching the wrapped FS.
type Fault struct {
	// Op is the operation the rule applies to (OpAnySync: any sync).
	Op Op
	// Match selects by name; nil matches any. It receives the name the
	// file was opened with for file operations, and newname for renames.
	// It is called with Faulty's lock held and must not call back into it.
	Match func(name string) bool
	// After skips this many matching calls before the rule fires (0: the
	// first matching call faults).
	After int
	// Times is how many matching calls fire once it has started: 0 means
	// once, -1 (any negative) forever.
	Times int
	// Err is the error returned, wrapped in an *fs.PathError (an
	// *os.LinkError for renames) so errors.Is(err, syscall.ENOSPC) works.
	// Nil means syscall.EIO, except for a write, where it means
	// io.ErrShortWrite.
	Err error
	// ShortWrite, for OpWrite: write only this many bytes of the buffer
	// (really, through to the wrapped file), then report that count and
	// the error. Zero: nothing is written.
	ShortWrite int
	// Silent, for OpWrite, OpSync, OpDatasync, OpSyncDir, OpSyncAll and OpAnySync:
	// the call does nothing and reports success (Err is ignored): a lost
	// write, or a sync that lies. This is the tool of the sync-mutation
	// check.
	Silent bool
}

type rule struct {
	Fault
	seen, fired int
}

// Faulty wraps an FS and injects faults by rule (see Fault). Calls that no
// rule fires on pass through unchanged. Safe for concurrent use.
//
// A faulted call does not reach the wrapped FS, except a short write
// (which writes its prefix) and a faulted Close (the file is closed, then
// the error is reported, as close(2) does).
type Faulty struct {
	inner FS

	mu    sync.Mutex
	rules []*rule
	calls map[Op]int
	fired map[Op]int
}

var _ FS = (*Faulty)(nil)

// NewFaulty returns a Faulty wrapping inner with no rules.
func NewFaulty(inner FS) *Faulty {
	return &Faulty{inner: inner, calls: map[Op]int{}, fired: map[Op]int{}}
}

// Inject adds a rule. When several rules would fire on one call, the one
// injected first fires and the others stay armed (each rule still counts
// the call toward its After).
func (f *Faulty) Inject(ft Fault) {
	if ft.Silent && ft.Op != OpWrite && ft.Op != OpAnySync && !OpAnySync.matches(ft.Op) {
		panic("vfs: Fault.Silent applies only to write and sync operations, not " + string(ft.Op))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &rule{Fault: ft})
}

// Clear removes all rules; counters are kept.
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Calls reports how many calls of op were made through f, faulted or not.
// Calls(OpAnySync) is the total of the three sync kinds.
func (f *Faulty) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return count(f.calls, op)
}

// Fired reports how many calls of op a rule fired on.
func (f *Faulty) Fired(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return count(f.fired, op)
}

func count(m map[Op]int, op Op) int {
	if op == OpAnySync {
		return m[OpSync] + m[OpDatasync] + m[OpSyncDir] + m[OpSyncAll]
	}
	return m[op]
}

// check counts a call and returns the rule that fires on it, if any.
func (f *Faulty) check(op Op, name string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	var hit *rule
	for _, r := range f.rules {
		if !r.Op.matches(op) || (r.Match != nil && !r.Match(name)) {
			continue
		}
		r.seen++
		limit := r.Times
		if limit == 0 {
			limit = 1
		}
		if hit == nil && r.seen > r.After && (limit < 0 || r.fired < limit) {
			hit = r
		}
	}
	if hit == nil {
		return nil
	}
	hit.fired++
	f.fired[op]++
	ft := hit.Fault
	return &ft
}

// cause is the error the fault reports, before wrapping.
func (ft *Fault) cause(op Op) error {
	switch {
	case ft.Err != nil:
		return ft.Err
	case op == OpWrite:
		return io.ErrShortWrite
	}
	return syscall.EIO
}

func (ft *Fault) err(op Op, name string) error {
	return &fs.PathError{Op: string(op), Path: name, Err: ft.cause(op)}
}

func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if ft := f.check(OpOpen, name); ft != nil {
		return nil, ft.err(OpOpen, name)
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{f: f, inner: file, name: name}, nil
}

func (f *Faulty) Mkdir(name string, perm fs.FileMode) error {
	if ft := f.check(OpMkdir, name); ft != nil {
		return ft.err(OpMkdir, name)
	}
	return f.inner.Mkdir(name, perm)
}

func (f *Faulty) Rename(oldname, newname string) error {
	return f.link(OpRename, oldname, newname, f.inner.Rename)
}

func (f *Faulty) RenameNoReplace(oldname, newname string) error {
	return f.link(OpRenameNoReplace, oldname, newname, f.inner.RenameNoReplace)
}

func (f *Faulty) Link(oldname, newname string) error {
	return f.link(OpLink, oldname, newname, f.inner.Link)
}

// link is a two-name operation (a rename or a link), counted under its
// new name; a fault fails it with an *os.LinkError.
func (f *Faulty) link(op Op, oldname, newname string, do func(oldname, newname string) error) error {
	if ft := f.check(op, newname); ft != nil {
		return &os.LinkError{Op: string(op), Old: oldname, New: newname, Err: ft.cause(op)}
	}
	return do(oldname, newname)
}

func (f *Faulty) Remove(name string) error {
	if ft := f.check(OpRemove, name); ft != nil {
		return ft.err(OpRemove, name)
	}
	return f.inner.Remove(name)
}

func (f *Faulty) RemoveAll(name string) error {
	if ft := f.check(OpRemoveAll, name); ft != nil {
		return ft.err(OpRemoveAll, name)
	}
	return f.inner.RemoveAll(name)
}

func (f *Faulty) Lstat(name string) (fs.FileInfo, error) {
	if ft := f.check(OpLstat, name); ft != nil {
		return nil, ft.err(OpLstat, name)
	}
	return f.inner.Lstat(name)
}

func (f *Faulty) ReadDir(name string) ([]fs.DirEntry, error) {
	if ft := f.check(OpReadDir, name); ft != nil {
		return nil, ft.err(OpReadDir, name)
	}
	return f.inner.ReadDir(name)
}

func (f *Faulty) SyncDir(name string) error {
	return f.sync(OpSyncDir, name, func() error { return f.inner.SyncDir(name) })
}

// SyncAll is one call, named after its first name ("." when none).
func (f *Faulty) SyncAll(names []string) error {
	name := "."
	if len(names) > 0 {
		name = names[0]
	}
	return f.sync(OpSyncAll, name, func() error { return f.inner.SyncAll(names) })
}

// sync is a sync operation under the rules: a silent fault skips it and
// reports success (nothing is made durable), any other fault fails it.
func (f *Faulty) sync(op Op, name string, sync func() error) error {
	if ft := f.check(op, name); ft != nil {
		if ft.Silent {
			return nil
		}
		return ft.err(op, name)
	}
	return sync()
}

type faultyFile struct {
	f     *Faulty
	inner File
	name  string
}

func (ff *faultyFile) Name() string { return ff.inner.Name() }

func (ff *faultyFile) Read(p []byte) (int, error) {
	if ft := ff.f.check(OpRead, ff.name); ft != nil {
		return 0, ft.err(OpRead, ff.name)
	}
	return ff.inner.Read(p)
}

func (ff *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if ft := ff.f.check(OpRead, ff.name); ft != nil {
		return 0, ft.err(OpRead, ff.name)
	}
	return ff.inner.ReadAt(p, off)
}

func (ff *faultyFile) Write(p []byte) (int, error) {
	return ff.write(p, ff.inner.Write)
}

// WriteAt is governed by the same OpWrite rules as Write.
func (ff *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	return ff.write(p, func(b []byte) (int, error) { return ff.inner.WriteAt(b, off) })
}

// write is a write of p under the OpWrite rules: a silent fault reports
// all of p written and writes none of it; any other fault writes the
// first ShortWrite bytes of p (none by default) and fails.
func (ff *faultyFile) write(p []byte, write func([]byte) (int, error)) (int, error) {
	ft := ff.f.check(OpWrite, ff.name)
	if ft == nil {
		return write(p)
	}
	if ft.Silent {
		return len(p), nil
	}
	n := 0
	if k := min(ft.ShortWrite, len(p)); k > 0 {
		var err error
		n, err = write(p[:k])
		if err != nil {
			return n, err
		}
	}
	return n, ft.err(OpWrite, ff.name)
}

func (ff *faultyFile) Close() error {
	if ft := ff.f.check(OpClose, ff.name); ft != nil {
		_ = ff.inner.Close()
		return ft.err(OpClose, ff.name)
	}
	return ff.inner.Close()
}

func (ff *faultyFile) Stat() (fs.FileInfo, error) {
	if ft := ff.f.check(OpStat, ff.name); ft != nil {
		return nil, ft.err(OpStat, ff.name)
	}
	return ff.inner.Stat()
}

func (ff *faultyFile) Sync() error {
	return ff.f.sync(OpSync, ff.name, ff.inner.Sync)
}

func (ff *faultyFile) Datasync() error {
	return ff.f.sync(OpDatasync, ff.name, ff.inner.Datasync)
}

func (ff *faultyFile) Truncate(size int64) error {
	if ft := ff.f.check(OpTruncate, ff.name); ft != nil {
		return ft.err(OpTruncate, ff.name)
	}
	return ff.inner.Truncate(size)
}
