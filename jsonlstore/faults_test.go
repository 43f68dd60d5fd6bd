package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The fault tests inject I/O errors through a
// vfs.Faulty, over a vfs.Sim and over the real file system, into every
// step the store takes: an append (ENOSPC mid-write, a short write, EIO on
// fdatasync), a creation, a recovery, a summary refresh. An append's
// fault must poison the writer and leave nothing half-done visible; a
// creation's must leave no session or a whole one; a recovery's must
// remove nothing; a summary's must not fail anything.
//
// The file is longer than the house limit because the four tests share
// one harness (fltEnv, fltCalls, fltCrashCheck) that is not worth a file
// of its own.

// fltRoot is the root of a simulated store as the leaser sees it.
const fltRoot = "/sim/faults"

// fltEnv is a store whose I/O goes through a Faulty.
type fltEnv struct {
	sim    *vfs.Sim    // nil on the real file system
	inner  vfs.FS      // what the Faulty wraps
	dir    string      // root (real directory, or fltRoot)
	faulty *vfs.Faulty // the store's FS
	st     *Store
}

// fltOpen builds a store on backend "sim" or "os". With realLeases (os
// only) its leases are fslease's, else a simLeaser's (which can simulate a
// holder's death).
func fltOpen(t testing.TB, backend string, realLeases bool) *fltEnv {
	t.Helper()
	e := &fltEnv{}
	var root *os.Root
	switch backend {
	case "sim":
		e.sim = vfs.NewSim()
		e.inner, e.dir = e.sim, fltRoot
	case "os":
		e.dir = t.TempDir()
		var err error
		root, err = os.OpenRoot(e.dir)
		require.NoError(t, err)
		e.inner = vfs.OS(root)
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	withCatalogDirs(t, e.inner, true)
	e.faulty = vfs.NewFaulty(e.inner)
	var l leaser = fsLeaser{}
	if !realLeases {
		l = newSimLeaser(e.inner, e.dir)
	}
	e.st = newStore(e.dir, root, e.faulty, l, Options{})
	// Whatever the faults did, the store is sound at the end; the check
	// reads past the faults.
	verifyAtCleanup(t, newStore(e.dir, root, e.inner, l, Options{}))
	t.Cleanup(func() { e.st.Close() })
	return e
}

// withCatalogDirs makes the catalog's directories (durably, with sync),
// as a store that has had a holder has them: the sweeps fault the calls of
// the operation under test, and the catalog's one-time directories are
// faulted by the catalog's own tests.
func withCatalogDirs(t testing.TB, fsys vfs.FS, sync bool) {
	for _, d := range []struct{ dir, parent string }{{CatalogDir, "."}, {catalogfile.MarksDir, CatalogDir}} {
		err := fsys.Mkdir(d.dir, layout.DirPerm)
		if err == nil && sync {
			err = fsys.SyncDir(d.parent)
		}
		if t != nil && err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
}

// fltOnSim builds a store on sim (a state to try something on), with a
// Faulty and a fresh simLeaser.
func fltOnSim(sim *vfs.Sim) *fltEnv {
	withCatalogDirs(nil, sim, true)
	e := &fltEnv{sim: sim, inner: sim, dir: fltRoot, faulty: vfs.NewFaulty(sim)}
	e.st = newStore(fltRoot, nil, e.faulty, newSimLeaser(sim, fltRoot), Options{})
	return e
}

// readFile reads a file of the store (nil if it does not exist).
func (e *fltEnv) readFile(t testing.TB, name string) []byte {
	t.Helper()
	var b []byte
	var err error
	if e.sim != nil {
		b, err = e.sim.ReadFile(name)
	} else {
		b, err = os.ReadFile(filepath.Join(e.dir, filepath.FromSlash(name)))
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return b
}

// fltCreate creates session id with revisions 1..n (plSnapshot variant
// 0) and returns its writer.
func fltCreate(t testing.TB, st *Store, id session.SessionID, n uint64) sessionstore.Writer {
	t.Helper()
	ctx := context.Background()
	w, err := st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{Label: "faults"})
	require.NoError(t, err)
	for rev := uint64(2); rev <= n; rev++ {
		got, err := w.Append(ctx, rev-1, plSnapshot(id, rev, 0))
		require.NoError(t, err)
		require.Equal(t, rev, got)
	}
	return w
}

// fltRequireRevisions checks, through the public reads of st, that session
// id holds exactly revisions 1..n, revision r being plSnapshot(id, r,
// variant(r)), and that a listing agrees.
func fltRequireRevisions(t testing.TB, st *Store, id session.SessionID, n uint64, variant func(rev uint64) int) {
	t.Helper()
	ctx := context.Background()
	rec, err := st.Load(ctx, id)
	require.NoError(t, err)
	require.Equal(t, n, rec.Revision, "latest revision")
	var rev uint64
	for rec, err := range st.History(ctx, id) {
		require.NoError(t, err)
		rev++
		require.Equal(t, rev, rec.Revision)
		got, err := adapter.EncodeSnapshot(id, rec.Snapshot, 0)
		require.NoError(t, err)
		require.Equal(t, plPayload(id, rev, variant(rev)), got, "revision %d", rev)
	}
	require.Equal(t, n, rev, "history length")
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	for _, s := range page.Items {
		if s.ID == id {
			require.Equal(t, n, s.Revision, "listed revision")
			return
		}
	}
	t.Fatalf("%s is not listed", id)
}

func fltVariant0(uint64) int { return 0 }

// isLogFile matches the name of a session log (also under a temporary
// directory).
func isLogFile(name string) bool { return strings.HasSuffix(name, "/"+LogFile) }

// TestFaultAppend: a fault in an append returns the error and poisons the
// writer for good; readers see only acknowledged revisions; a new holder,
// after the failed one released or died, recovers and appends, and every
// acknowledged revision is intact — also after a power loss.
func TestFaultAppend(t *testing.T) {
	const acked = 5
	faults := []struct {
		name  string
		fault vfs.Fault
		want  error
		// wantTail: the fault leaves a torn record for recovery.
		wantTail bool
	}{
		{
			name:     "ENOSPC mid-write",
			fault:    vfs.Fault{Op: vfs.OpWrite, Match: isLogFile, ShortWrite: 700, Err: syscall.ENOSPC},
			want:     syscall.ENOSPC,
			wantTail: true,
		},
		{
			name:  "ENOSPC before any byte",
			fault: vfs.Fault{Op: vfs.OpWrite, Match: isLogFile, Err: syscall.ENOSPC},
			want:  syscall.ENOSPC,
		},
		{
			name:     "short write",
			fault:    vfs.Fault{Op: vfs.OpWrite, Match: isLogFile, ShortWrite: 5000},
			want:     io.ErrShortWrite,
			wantTail: true,
		},
		{
			name:  "EIO on fdatasync",
			fault: vfs.Fault{Op: vfs.OpDatasync, Match: isLogFile, Err: syscall.EIO},
			want:  syscall.EIO,
		},
	}
	setups := []struct {
		backend    string
		realLeases bool
		handoff    string // "release" or "death"
	}{
		{"sim", false, "release"},
		{"sim", false, "death"},
		{"os", true, "release"},
		{"os", false, "death"},
	}
	for _, f := range faults {
		for _, su := range setups {
			leases := "simlease"
			if su.realLeases {
				leases = "fslease"
			}
			t.Run(fmt.Sprintf("%s/%s/%s/%s", f.name, su.backend, leases, su.handoff), func(t *testing.T) {
				ctx := context.Background()
				e := fltOpen(t, su.backend, su.realLeases)
				id := session.SessionID("flt-append")
				w := fltCreate(t, e.st, id, acked)
				gen := w.Generation()
				logBefore := e.readFile(t, layout.LogPath(id))

				// The failing append, and the writer stays failed.
				e.faulty.Inject(f.fault)
				_, err := w.Append(ctx, acked, plSnapshot(id, acked+1, 0))
				require.ErrorIs(t, err, sessionstore.ErrWriterFailed)
				require.ErrorIs(t, err, f.want)
				var oe *sessionstore.OpError
				require.ErrorAs(t, err, &oe, "an operational error says where")
				require.Equal(t, "append", oe.Op)
				require.Equal(t, id, oe.ID)
				require.Equal(t, 1, e.faulty.Fired(f.fault.Op), "the fault fired")
				writes, syncs := e.faulty.Calls(vfs.OpWrite), e.faulty.Calls(vfs.OpAnySync)
				for _, expected := range []uint64{acked, acked, acked + 1} {
					_, err = w.Append(ctx, expected, plSnapshot(id, acked+1, 0))
					require.ErrorIs(t, err, sessionstore.ErrWriterFailed, "a retry with expected revision %d", expected)
				}
				require.Equal(t, writes, e.faulty.Calls(vfs.OpWrite), "a failed writer writes nothing")
				require.Equal(t, syncs, e.faulty.Calls(vfs.OpAnySync), "a failed writer syncs nothing")
				require.Equal(t, uint64(acked), w.Revision())

				// Readers of the same store see only what was acknowledged.
				fltRequireRevisions(t, e.st, id, acked, fltVariant0)
				logFailed := e.readFile(t, layout.LogPath(id))
				require.True(t, bytes.HasPrefix(logFailed, logBefore), "acknowledged bytes untouched")

				// While the failed writer holds the lease, nobody else
				// gets it.
				_, err = e.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
				require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)

				// A power loss now loses nothing acknowledged.
				if e.sim != nil {
					fltCrashCheck(t, e.sim, id, acked, fltVariant0)
				}

				wantPrev := summary.LeaseFree
				switch su.handoff {
				case "release":
					require.NoError(t, w.Release(ctx))
				case "death":
					w.(*writer).lease.(*simLease).die()
					_ = w.Release(ctx) // the kernel closes a dead process's files; its lease is lost
					wantPrev = summary.LeaseStale
				}
				w2, err := e.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{Label: "next"})
				require.NoError(t, err)
				defer w2.Release(ctx)
				rep := w2.Recovery()
				require.Equal(t, wantPrev, rep.Previous.State)
				require.Greater(t, w2.Generation(), gen)
				tail := logFailed[len(logBefore):]
				if f.wantTail {
					require.NotEmpty(t, tail)
				}
				if len(tail) > 0 {
					require.Equal(t, int64(len(logBefore)), rep.TailOffset)
					require.Equal(t, int64(len(tail)), rep.TailBytes)
					require.Equal(t, tail, e.readFile(t, rep.ForensicFile), "the removed tail is kept")
				} else {
					require.Zero(t, rep.TailBytes)
				}
				require.Equal(t, logBefore, e.readFile(t, layout.LogPath(id)), "after recovery: the acknowledged log, byte for byte")

				for rev := uint64(acked + 1); rev <= acked+2; rev++ {
					got, err := w2.Append(ctx, rev-1, plSnapshot(id, rev, 1))
					require.NoError(t, err)
					require.Equal(t, rev, got)
				}
				fltRequireRevisions(t, e.st, id, acked+2, func(rev uint64) int { return min(1, int(rev/(acked+1))) })
				if e.sim != nil {
					fltCrashCheck(t, e.sim, id, acked+2, func(rev uint64) int { return min(1, int(rev/(acked+1))) })
				}
			})
		}
	}
}

// fltCrashSeeds is the number of unkind crashes fltCrashCheck tries.
const fltCrashSeeds = 8

// fltCrashCheck crashes sim (nothing pending kept, and fltCrashSeeds
// unkind ways) and checks that session id still has revisions 1..acked
// intact (more are allowed: unacknowledged ones that survived), and that
// a new holder recovers and appends.
func fltCrashCheck(t testing.TB, sim *vfs.Sim, id session.SessionID, acked uint64, variant func(rev uint64) int) {
	t.Helper()
	ctx := context.Background()
	crashes := []*vfs.Sim{sim.CrashDurableOnly()}
	for seed := range uint64(fltCrashSeeds) {
		crashes = append(crashes, sim.Crash(crashtest.Rand(0xf17, seed)))
	}
	for i, c := range crashes {
		e := fltOnSim(c)
		rec, err := e.st.Load(ctx, id)
		require.NoError(t, err, "crash %d", i)
		require.GreaterOrEqual(t, rec.Revision, acked, "crash %d", i)
		rev := uint64(0)
		for r, err := range e.st.History(ctx, id) {
			require.NoError(t, err, "crash %d", i)
			rev++
			require.Equal(t, rev, r.Revision)
			if rev <= acked {
				got, err := adapter.EncodeSnapshot(id, r.Snapshot, 0)
				require.NoError(t, err)
				require.Equal(t, plPayload(id, rev, variant(rev)), got, "crash %d revision %d", i, rev)
			}
		}
		require.Equal(t, rec.Revision, rev, "crash %d", i)
		w, err := e.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
		require.NoError(t, err, "crash %d", i)
		require.Greater(t, w.Generation(), rec.Generation, "crash %d", i)
		_, err = w.Append(ctx, rec.Revision, plSnapshot(id, rec.Revision+1, 9))
		require.NoError(t, err, "crash %d", i)
		require.NoError(t, w.Release(ctx))
		require.NoError(t, e.st.Close())
	}
}

// fltCall is one call of an operation, by its index among the calls of
// that operation.
type fltCall struct {
	op vfs.Op
	k  int
}

// fltOps are the operations the sweeps fault.
var fltOps = []vfs.Op{
	vfs.OpOpen, vfs.OpRead, vfs.OpWrite, vfs.OpSync, vfs.OpDatasync, vfs.OpTruncate, vfs.OpStat, vfs.OpClose,
	vfs.OpMkdir, vfs.OpRename, vfs.OpRenameNoReplace, vfs.OpRemove, vfs.OpRemoveAll, vfs.OpLstat,
	vfs.OpReadDir, vfs.OpSyncDir,
}

// fltCalls returns every call f has seen, for a sweep that faults each
// one in turn.
func fltCalls(f *vfs.Faulty) []fltCall {
	var out []fltCall
	for _, op := range fltOps {
		for k := range f.Calls(op) {
			out = append(out, fltCall{op, k})
		}
	}
	return out
}

// TestFaultCreate faults each call a creation makes, in turn: Create
// fails (or, for calls whose failure does not matter, succeeds), and
// leaves no session or a whole one — with its lease free — and nothing
// else visible; a power loss afterwards does not change that.
func TestFaultCreate(t *testing.T) {
	ctx := context.Background()
	id := session.SessionID("flt-create")
	// The steps a creation must not survive half done, by the operation
	// and name its fault matches.
	named := map[string]vfs.Fault{
		"mkdir":        {Op: vfs.OpMkdir},
		"log open":     {Op: vfs.OpOpen, Match: isLogFile},
		"log write":    {Op: vfs.OpWrite, Match: isLogFile, ShortWrite: 100, Err: syscall.ENOSPC},
		"log sync":     {Op: vfs.OpDatasync, Match: isLogFile},
		"syncdir temp": {Op: vfs.OpSyncDir, Match: func(n string) bool { return strings.HasPrefix(n, layout.TmpDirPrefix) }},
		"rename":       {Op: vfs.OpRenameNoReplace},
		"syncdir root": {Op: vfs.OpSyncDir, Match: func(n string) bool { return n == "." }},
	}
	// wantWhole: the step publishes the session, so a failure after it
	// leaves a whole one.
	wantWhole := map[string]bool{"syncdir root": true}

	type tc struct {
		name  string
		fault vfs.Fault
	}
	var cases []tc
	for _, name := range slices.Sorted(maps.Keys(named)) {
		cases = append(cases, tc{name, named[name]})
	}
	var calls []fltCall
	{
		e := fltOnSim(vfs.NewSim())
		_, err := e.st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		calls = fltCalls(e.faulty) // the calls of Create, not of a Release
	}
	for _, c := range calls {
		cases = append(cases, tc{fmt.Sprintf("%s#%d", c.op, c.k), vfs.Fault{Op: c.op, After: c.k}})
	}
	t.Logf("%d calls in a creation", len(calls))

	for _, backend := range []string{"sim", "os"} {
		for _, c := range cases {
			if backend == "os" && strings.Contains(c.name, "#") && c.fault.Op != vfs.OpSyncDir && c.fault.Op != vfs.OpDatasync {
				continue // the sweep runs on the sim; the real FS gets the named steps and the syncs
			}
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				e := fltOpen(t, backend, backend == "os")
				e.faulty.Inject(c.fault)
				w, err := e.st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{})
				require.Equal(t, 1, e.faulty.Fired(c.fault.Op), "the fault fired")
				var after *vfs.Sim
				if e.sim != nil {
					after = e.sim.Snapshot()
				}
				whole := fltCreateOutcome(t, e, id, w, err)
				if _, ok := named[c.name]; ok {
					require.Error(t, err, "a failed %s fails Create", c.name)
					var oe *sessionstore.OpError
					require.ErrorAs(t, err, &oe, "an operational error says where")
					require.Equal(t, id, oe.ID)
					require.Equal(t, wantWhole[c.name], whole, "after a failed %s", c.name)
				}
				if after == nil {
					return
				}
				// A power loss right after Create returned: still nothing
				// or a whole session, and a whole one if Create succeeded.
				crashes := []*vfs.Sim{after.CrashDurableOnly(), after.CrashAll()}
				for seed := range uint64(3) {
					crashes = append(crashes, after.Crash(crashtest.Rand(0xc7, seed)))
				}
				for i, crashed := range crashes {
					ce := fltOnSim(crashed)
					_, lerr := ce.st.Load(ctx, id)
					if errors.Is(lerr, sessionstore.ErrNotFound) {
						require.Error(t, err, "crash %d: an acknowledged creation is lost", i)
						page, lerr := ce.st.List(ctx, summary.Query{})
						require.NoError(t, lerr)
						require.Empty(t, page.Items, "crash %d", i)
						continue
					}
					require.NoError(t, lerr, "crash %d: a session after a crash is whole", i)
					fltRequireRevisions(t, ce.st, id, 1, fltVariant0)
					w, err := ce.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
					require.NoError(t, err, "crash %d", i)
					require.NoError(t, w.Release(ctx))
					require.NoError(t, ce.st.Close())
				}
			})
		}
	}
}

// fltCreateOutcome checks what a Create that returned (w, err) left: no
// session, or a whole one whose lease is free (it returns true then); no
// temporary directory; nothing else listed. It releases w.
func fltCreateOutcome(t *testing.T, e *fltEnv, id session.SessionID, w sessionstore.Writer, err error) (whole bool) {
	t.Helper()
	ctx := context.Background()
	if err == nil {
		require.NoError(t, w.Release(ctx))
	}
	for _, name := range e.readDir(t, ".") {
		require.False(t, strings.HasPrefix(name, layout.TmpDirPrefix), "temporary directory %s left behind", name)
	}
	page, lerr := e.st.List(ctx, summary.Query{})
	require.NoError(t, lerr)
	_, lerr = e.st.Load(ctx, id)
	if errors.Is(lerr, sessionstore.ErrNotFound) {
		require.Error(t, err, "Create succeeded but the session is missing")
		require.Empty(t, page.Items)
		// Nothing there: creating it again works.
		e.faulty.Clear()
		w, err := e.st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
		return false
	}
	require.NoError(t, lerr)
	e.faulty.Clear()
	fltRequireRevisions(t, e.st, id, 1, fltVariant0)
	require.Len(t, page.Items, 1)
	w2, err2 := e.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err2, "the creator's lease was released")
	require.Equal(t, uint64(2), w2.Generation())
	_, err2 = w2.Append(ctx, 1, plSnapshot(id, 2, 0))
	require.NoError(t, err2)
	require.NoError(t, w2.Release(ctx))
	_, err2 = e.st.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{})
	require.ErrorIs(t, err2, sessionstore.ErrExists)
	return true
}

// TestFaultRecovery faults each call a recovery makes, in turn, on a
// session whose log ends with a torn append: Acquire fails without
// removing anything (or, when the fault comes after the tail was safely
// copied, with the tail in its forensic file), releases the lease, and
// the next attempt recovers; acknowledged revisions are intact
// throughout, also after a power loss. The sweep runs on the Sim; the
// named steps run on the real file system too.
func TestFaultRecovery(t *testing.T) {
	ctx := context.Background()
	const acked, tornBytes = 5, 5000
	id := session.SessionID("flt-recover")

	// tornState is a session with revisions 1..acked and a torn append of
	// acked+1, whose writer released the lease.
	type tornState struct {
		e                   *fltEnv
		logTorn, clean, tip []byte
	}
	build := func(t *testing.T, e *fltEnv) tornState {
		w := fltCreate(t, e.st, id, acked)
		e.faulty.Inject(vfs.Fault{Op: vfs.OpWrite, Match: isLogFile, ShortWrite: tornBytes})
		_, err := w.Append(ctx, acked, plSnapshot(id, acked+1, 0))
		require.ErrorIs(t, err, sessionstore.ErrWriterFailed)
		require.NoError(t, w.Release(ctx))
		e.faulty.Clear()
		log := e.readFile(t, layout.LogPath(id))
		return tornState{e: e, logTorn: log, clean: log[:len(log)-tornBytes], tip: log[len(log)-tornBytes:]}
	}
	simState := build(t, fltOpen(t, "sim", false)).e.sim.Snapshot()
	torn := func(t *testing.T, backend string) tornState {
		if backend == "os" {
			return build(t, fltOpen(t, "os", true))
		}
		e := fltOnSim(simState.Snapshot())
		t.Cleanup(func() { e.st.Close() })
		log := e.readFile(t, layout.LogPath(id))
		return tornState{e: e, logTorn: log, clean: log[:len(log)-tornBytes], tip: log[len(log)-tornBytes:]}
	}

	isForensic := func(n string) bool { return strings.Contains(n, "/"+ForensicDir) }
	named := map[string]vfs.Fault{
		"forensic mkdir":          {Op: vfs.OpMkdir, Match: isForensic},
		"forensic create":         {Op: vfs.OpOpen, Match: isForensic},
		"forensic write":          {Op: vfs.OpWrite, Match: isForensic, ShortWrite: 10, Err: syscall.ENOSPC},
		"forensic sync":           {Op: vfs.OpSync, Match: isForensic},
		"forensic syncdir":        {Op: vfs.OpSyncDir, Match: isForensic},
		"session syncdir":         {Op: vfs.OpSyncDir, Match: func(n string) bool { return n == string(id) }},
		"truncate":                {Op: vfs.OpTruncate},
		"sync after the truncate": {Op: vfs.OpDatasync, Match: isLogFile},
	}
	// cutBefore: the fault comes after the truncation was issued, so the
	// tail may be gone from the log (into its forensic file).
	cutBefore := map[string]bool{"sync after the truncate": true}

	type tc struct {
		name  string
		fault vfs.Fault
	}
	var cases []tc
	for _, name := range slices.Sorted(maps.Keys(named)) {
		cases = append(cases, tc{name, named[name]})
	}
	var recoveryCalls []fltCall
	{
		ts := torn(t, "sim")
		w, err := ts.e.st.Acquire(ctx, id, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.Equal(t, int64(tornBytes), w.Recovery().TailBytes)
		recoveryCalls = fltCalls(ts.e.faulty) // the calls of Acquire, not of a Release
		require.NoError(t, w.Release(ctx))
	}
	for _, c := range recoveryCalls {
		cases = append(cases, tc{fmt.Sprintf("%s#%d", c.op, c.k), vfs.Fault{Op: c.op, After: c.k}})
	}
	t.Logf("%d calls in a recovery", len(recoveryCalls))

	for _, backend := range []string{"sim", "os"} {
		for _, c := range cases {
			_, isNamed := named[c.name]
			if backend == "os" && !isNamed {
				continue
			}
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				ts := torn(t, backend)
				e := ts.e
				fired := e.faulty.Fired(c.fault.Op)
				e.faulty.Inject(c.fault)
				w, err := e.st.Acquire(ctx, id, sessionstore.AcquireOptions{})
				require.Equal(t, fired+1, e.faulty.Fired(c.fault.Op), "the fault fired")
				if isNamed {
					require.Error(t, err, "a failed %s fails Acquire", c.name)
				}
				if err != nil {
					// A forensic copy that failed was removed: what
					// forensic/ holds is whole copies of the tail.
					entries, _ := e.inner.ReadDir(layout.SessionDir(id) + "/" + ForensicDir)
					for _, en := range entries {
						b, rerr := vfs.ReadFile(e.inner, layout.SessionDir(id)+"/"+ForensicDir+"/"+en.Name(), 1<<30)
						require.NoError(t, rerr)
						require.Equal(t, ts.tip, b, "a partial forensic copy %s was left behind", en.Name())
					}
				}
				log := e.readFile(t, layout.LogPath(id))
				switch {
				case bytes.Equal(log, ts.logTorn):
				case bytes.Equal(log, ts.clean) && (err == nil || !isNamed || cutBefore[c.name]):
					// Cut: the tail must be in a forensic file.
					require.True(t, fltForensicHolds(e, id, ts.tip), "the removed tail is in no forensic file")
				default:
					t.Fatalf("log is neither the torn one nor the clean one (%d bytes; err %v)", len(log), err)
				}
				if err == nil {
					require.Greater(t, w.Generation(), uint64(1), "a generation above every one in the log")
					require.NoError(t, w.Release(ctx))
				}
				e.faulty.Clear()
				// Readers see the acknowledged revisions, before and after a
				// power loss, and a new holder recovers and appends.
				fltRequireRevisions(t, e.st, id, acked, fltVariant0)
				if e.sim != nil {
					fltCrashCheck(t, e.sim, id, acked, fltVariant0)
				}
				w, err = e.st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
				require.NoError(t, err, "the failed Acquire released the lease")
				rep := w.Recovery()
				require.Equal(t, ts.clean, e.readFile(t, layout.LogPath(id)))
				if rep.TailBytes > 0 {
					require.Equal(t, ts.tip, e.readFile(t, rep.ForensicFile))
				}
				_, err = w.Append(ctx, acked, plSnapshot(id, acked+1, 1))
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))
				fltRequireRevisions(t, e.st, id, acked+1, func(rev uint64) int { return min(1, int(rev/(acked+1))) })
			})
		}
	}
}

// fltForensicHolds reports whether a forensic file of session id holds
// exactly data.
func fltForensicHolds(e *fltEnv, id session.SessionID, data []byte) bool {
	dir := layout.SessionDir(id) + "/" + ForensicDir
	entries, err := e.inner.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, en := range entries {
		if b, err := vfs.ReadFile(e.inner, dir+"/"+en.Name(), 1<<30); err == nil && bytes.Equal(b, data) {
			return true
		}
	}
	return false
}

// TestFaultSummary: summary.json is a cache; failing to refresh it (at any
// step, whatever calls the refresh makes) never fails an append, and
// never makes a listing disagree with the log.
func TestFaultSummary(t *testing.T) {
	ctx := context.Background()
	isSummary := func(n string) bool { return strings.Contains(n, SummaryFile) }
	faults := map[string]vfs.Fault{
		"open":         {Op: vfs.OpOpen, Match: isSummary, Times: -1},
		"stat":         {Op: vfs.OpStat, Match: isSummary, Times: -1},
		"ENOSPC write": {Op: vfs.OpWrite, Match: isSummary, ShortWrite: 10, Err: syscall.ENOSPC, Times: -1},
		"short write":  {Op: vfs.OpWrite, Match: isSummary, ShortWrite: 10, Times: -1},
		"EIO write":    {Op: vfs.OpWrite, Match: isSummary, Err: syscall.EIO, Times: -1},
		"truncate":     {Op: vfs.OpTruncate, Match: isSummary, Times: -1},
		"close":        {Op: vfs.OpClose, Match: isSummary, Times: -1},
		"rename":       {Op: vfs.OpRename, Match: isSummary, Times: -1},
		"sync":         {Op: vfs.OpAnySync, Match: isSummary, Times: -1},
	}
	for _, backend := range []string{"sim", "os"} {
		for _, name := range slices.Sorted(maps.Keys(faults)) {
			t.Run(backend+"/"+name, func(t *testing.T) {
				e := fltOpen(t, backend, backend == "os")
				id := session.SessionID("flt-summary")
				ft := faults[name]
				e.faulty.Inject(ft)
				// Under the fault: a creation, appends, a new holder's
				// appends. Nothing fails, and reads agree with the log.
				w := fltCreate(t, e.st, id, 3)
				fltRequireRevisions(t, e.st, id, 3, fltVariant0)
				require.NoError(t, w.Release(ctx))
				w, err := e.st.Acquire(ctx, id, sessionstore.AcquireOptions{})
				require.NoError(t, err)
				defer w.Release(ctx)
				for rev := uint64(4); rev <= 6; rev++ {
					got, err := w.Append(ctx, rev-1, plSnapshot(id, rev, 0))
					require.NoError(t, err, "a summary failure does not fail the append")
					require.Equal(t, rev, got)
					fltRequireRevisions(t, e.st, id, rev, fltVariant0)
				}
				if e.faulty.Fired(ft.Op) == 0 {
					t.Skipf("the summary refresh makes no %s call", ft.Op)
				}
				for _, n := range e.readDir(t, layout.SessionDir(id)) {
					require.False(t, strings.HasSuffix(n, layout.TmpSuffix), "temporary summary %s left behind", n)
				}
				if e.sim != nil {
					fltCrashCheck(t, e.sim, id, 6, fltVariant0)
				}
				e.faulty.Clear()
				_, err = w.Append(ctx, 6, plSnapshot(id, 7, 0))
				require.NoError(t, err)
				fltRequireRevisions(t, e.st, id, 7, fltVariant0)
				sf, ok := logfile.ReadSummary(e.inner, id)
				require.True(t, ok, "the summary is refreshed again")
				require.Equal(t, uint64(7), sf.Revision)
			})
		}
	}
}

// readDir lists a directory's names.
func (e *fltEnv) readDir(t testing.TB, name string) []string {
	t.Helper()
	entries, err := e.inner.ReadDir(name)
	require.NoError(t, err)
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	return names
}
