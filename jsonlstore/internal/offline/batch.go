package offline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// A full backup copies many sessions; making each durable on its own
// (a sync of every file and directory, then of the root after its
// rename) costs several flushes a session. It copies sessions in
// batches instead: each into a temporary directory of the destination,
// nothing synced, and checked as it is written (copycheck.go), on other
// goroutines while the next sessions are copied;
// then the copies that do not check are removed and reported, the rest of
// the batch is made durable at once (vfs.FS.SyncAll: one syncfs on
// Linux), each session published by its rename, and the root synced
// once — on a goroutine of its own while the next batch is copied, so
// that the flush overlaps the copying (a batch is published only after
// the one before it is, and an error publishing one stops the backup at
// the next batch's end). Nothing is published before it is durable and
// checked; a crash
// before a session's rename leaves only a temporary directory, which is
// never taken for a session and is swept as any leftover is.

// VerifyStaged is whether a full backup checks each staged session. It
// is always true but in the measurement of a backup's floor (the copy
// alone, TestBackupTargets).
var VerifyStaged = true

// Batch limits: sessions, and bytes copied.
const (
	batchSessions = 512
	batchBytes    = 64 << 20
)

// staged is a session copied into a temporary directory of the
// destination (stage), not yet published.
type staged struct {
	id    session.SessionID
	tmp   string
	names []string // what was written: directories and files, for SyncAll
	bytes int64
	// What was copied, for the check of the copy (copycheck.go): the
	// log's bytes and last revision.
	logBytes int64
	rev      uint64
	// What checking the staged copy found, or kept it from checking it.
	sr  sessionstore.SessionVerifyReport
	err error
	// faithful: sr has problems, and every file of the copy holds the
	// bytes read from the source (the damage is the source's).
	faithful bool
}

// publish renames the staged directory to the session's name; an
// existing session there is never replaced. On an error the staged
// directory is removed.
func (st *staged) publish(dst vfs.FS) error {
	err := dst.RenameNoReplace(st.tmp, layout.SessionDir(st.id))
	if err != nil {
		_ = dst.RemoveAll(st.tmp)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: session %s in the destination", sessionstore.ErrExists, st.id)
		}
	}
	return err
}

// batch is the staged sessions of a full backup into dst.
type batch struct {
	dst   *Store
	rep   *maintenance.BackupReport
	jobs  []*stageJob   // this batch's sessions, in order, being staged
	bytes atomic.Int64  // copied into jobs' staged sessions
	slots chan struct{} // one per staging goroutine
	wg    sync.WaitGroup
	// stop is the first error a job met that stops the backup.
	mu   sync.Mutex
	stop error
	// copied is the sessions published.
	copied []session.SessionID
	// The batch before, being published (publish), and where its
	// publishing reports (nil when none is).
	publishing []*staged
	published  chan error
}

// stageJob is one new session of a full backup, staged on a goroutine of
// its own: what was staged and checked (st, sb), or why nothing was (the
// session skipped, unreadable, or an error that stops the backup).
type stageJob struct {
	id   session.SessionID
	st   *staged
	sb   maintenance.SessionBackup
	skip string
	bad  error
	err  error
}

func newBatch(dst *Store, rep *maintenance.BackupReport) *batch {
	return &batch{dst: dst, rep: rep, slots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))}
}

// stage runs stageOne (as run, which checks the copy as it writes it) on
// a free goroutine (waiting for one), and reports whether the batch is
// full.
// Sessions are copied and checked side by side; what they found is
// reported in their order (flush).
func (b *batch) stage(run func() *stageJob) bool {
	j := new(stageJob)
	b.jobs = append(b.jobs, j)
	b.slots <- struct{}{}
	b.wg.Add(1)
	go func() {
		defer func() { <-b.slots; b.wg.Done() }()
		*j = *run()
		if j.err != nil {
			b.stopWith(j.err)
		}
		if j.st == nil {
			return
		}
		b.bytes.Add(j.st.bytes)
	}()
	return len(b.jobs) >= batchSessions || b.bytes.Load() >= batchBytes
}

// err is the first error a job met that stops the backup (nil while
// none did).
func (b *batch) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stop
}

func (b *batch) stopWith(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop == nil {
		b.stop = err
	}
}

// report adds to the report what job j, which staged nothing, found: a
// session skipped or unreadable.
func (b *batch) report(j *stageJob) {
	switch {
	case j.skip != "":
		skip(b.rep, j.id, j.skip)
	case j.bad != nil:
		b.rep.Unreadable = append(b.rep.Unreadable, summary.UnreadableOf(j.id, j.bad))
	}
}

// flush ends the batch being staged: it waits for its jobs, adds what
// they found to the report, removes the copies that do not check, then,
// once the batch before it is published (wait), starts publishing the
// rest (publish) on a goroutine of its own while the next batch is
// staged: its flush (syncfs on Linux) overlaps that copying. On an error
// nothing more is published and what is unpublished is removed.
func (b *batch) flush() error {
	b.wg.Wait()
	var ready []*staged
	for _, j := range b.jobs {
		switch {
		case j.err != nil:
		case j.st != nil:
			ready = append(ready, j.st)
			b.rep.BytesCopied += j.sb.BytesCopied
			b.rep.Sessions = append(b.rep.Sessions, j.sb)
		default:
			b.report(j)
		}
	}
	b.jobs = b.jobs[:0]
	b.bytes.Store(0)
	fsys := b.dst.root.FS
	removeAll := func(sts []*staged) {
		for _, st := range sts {
			_ = fsys.RemoveAll(st.tmp)
		}
	}
	if err := b.err(); err != nil {
		removeAll(ready)
		return err
	}
	for _, st := range ready {
		if st.err != nil && logfile.EndsStoreWide(st.err) {
			removeAll(ready)
			return st.err
		}
	}
	// A copy that does not check is not published, unless it is faithful
	// to a damaged source: it is removed, and reported (its problems, or
	// what kept it from being checked).
	good := ready[:0]
	for _, st := range ready {
		if VerifyStaged && (st.err != nil || !st.sr.OK() && !st.faithful) {
			_ = fsys.RemoveAll(st.tmp)
			b.refuse(st)
			continue
		}
		good = append(good, st)
	}
	if err := b.wait(); err != nil {
		removeAll(good)
		return err
	}
	if len(good) == 0 {
		return nil
	}
	done := make(chan error, 1)
	b.publishing, b.published = good, done
	go func() { done <- publish(fsys, good) }()
	return nil
}

// finish flushes the last batch and waits until it is published.
func (b *batch) finish() error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.wait()
}

// wait waits for the batch being published, if any, and adds its
// sessions to the report and to those copied once they all are.
func (b *batch) wait() error {
	if b.published == nil {
		return nil
	}
	err := <-b.published
	sts := b.publishing
	b.publishing, b.published = nil, nil
	if err != nil {
		return err
	}
	for _, st := range sts {
		addVerified(&b.rep.Verify, st.id, st.sr, st.err)
		b.copied = append(b.copied, st.id)
	}
	return nil
}

// publish makes the staged sessions sts durable at once (SyncAll), then
// publishes each by its rename and syncs the root. On an error the
// sessions not yet published are removed.
func publish(fsys vfs.FS, sts []*staged) (err error) {
	published := 0
	defer func() {
		for _, st := range sts[published:] {
			_ = fsys.RemoveAll(st.tmp)
		}
	}()
	var names []string
	for _, st := range sts {
		names = append(names, st.names...)
	}
	if err := fsys.SyncAll(names); err != nil {
		return err
	}
	for _, st := range sts {
		err := st.publish(fsys)
		published++ // on an error, removed by publish
		if err != nil {
			return layout.OpErr("backup", st.id, err)
		}
	}
	return fsys.SyncDir(".")
}

// refuse reports st, a copy that did not check, as not published: what
// the check found, and the session taken out of what was copied.
func (b *batch) refuse(st *staged) {
	addVerified(&b.rep.Verify, st.id, st.sr, st.err)
	why := "its copy does not check"
	switch {
	case st.err != nil:
		why += ": " + st.err.Error()
	case len(st.sr.Problems) > 0:
		why += ": " + st.sr.Problems[0].File + ": " + st.sr.Problems[0].Message
	}
	skip(b.rep, st.id, "not published: "+why)
	b.rep.Sessions = slices.DeleteFunc(b.rep.Sessions, func(sb maintenance.SessionBackup) bool {
		if sb.ID == st.id {
			b.rep.BytesCopied -= sb.BytesCopied
			return true
		}
		return false
	})
}

// abort waits for the jobs and for the batch being published, and
// removes what is staged.
func (b *batch) abort() {
	b.wg.Wait()
	_ = b.wait() // the backup failed already; publish removes what it did not publish
	for _, j := range b.jobs {
		if j.st != nil {
			_ = b.dst.root.FS.RemoveAll(j.st.tmp)
		}
	}
	b.jobs = nil
}

// stagedView is s as seen with st's temporary directory under the
// session's name, read-only: the references of a staged copy are checked
// in it as in the session it becomes (checkRefs), through its directory
// opened once (vfs.Within). Close closes the directory.
func (s *Store) stagedView(st *staged) (_ *Store, closeView func(), err error) {
	dir, err := vfs.Within(s.root.FS, st.tmp, string(st.id))
	if err != nil {
		return nil, nil, layout.OpErr("backup", st.id, err)
	}
	root := *s.root
	root.FS = stagedFS{FS: dir}
	return &Store{root: &root, host: s.host}, func() { _ = dir.Close() }, nil // read-only
}

// stagedFS refuses every change of FS.
type stagedFS struct {
	vfs.FS
}

var errStagedReadOnly = errors.New("a staged copy is read-only")

func (f stagedFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errStagedReadOnly}
	}
	return f.FS.OpenFile(name, flag, perm)
}
func (f stagedFS) Mkdir(name string, _ fs.FileMode) error { return f.refuse(name) }
func (f stagedFS) Rename(o, _ string) error               { return f.refuse(o) }
func (f stagedFS) RenameNoReplace(o, _ string) error      { return f.refuse(o) }
func (f stagedFS) Link(o, _ string) error                 { return f.refuse(o) }
func (f stagedFS) Remove(name string) error               { return f.refuse(name) }
func (f stagedFS) RemoveAll(name string) error            { return f.refuse(name) }
func (f stagedFS) SyncDir(name string) error              { return f.refuse(name) }
func (f stagedFS) SyncAll([]string) error                 { return f.refuse(".") }
func (f stagedFS) refuse(name string) error {
	return &fs.PathError{Op: "write", Path: name, Err: errStagedReadOnly}
}

// verifyWritten verifies the sessions of s (a backup's destination) that
// a backup wrote in place (brought up to date), adding to the report.
func (s *Store) verifyWritten(ctx context.Context, ids []session.SessionID, rep *maintenance.BackupReport) error {
	for _, id := range ids {
		sr, err := s.VerifySession(ctx, id, false)
		if err != nil && logfile.EndsStoreWide(err) {
			return err
		}
		addVerified(&rep.Verify, id, sr, err)
	}
	return nil
}

// addVerified adds to v what verifying session id found (sr), or, when
// err kept it from checking the session, the session as unreadable.
func addVerified(v *sessionstore.VerifyReport, id session.SessionID, sr sessionstore.SessionVerifyReport, err error) {
	if err != nil {
		v.Unreadable = append(v.Unreadable, summary.UnreadableOf(id, err))
		return
	}
	v.Sessions = append(v.Sessions, sr)
}
