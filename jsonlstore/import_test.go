package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

var (
	_ sessionstore.Verifier     = (*Store)(nil)
	_ sessionstore.RecordLister = (*Store)(nil)
	_ sessionstore.Exporter     = (*Store)(nil)
)

// seqOf yields lines.
func seqOf(lines [][]byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for _, l := range lines {
			if !yield(l, nil) {
				return
			}
		}
	}
}

// collectLines returns the record lines of id in st.
func collectLines(t testing.TB, st *Store, id session.SessionID) [][]byte {
	t.Helper()
	var out [][]byte
	for l, err := range st.RecordLines(context.Background(), id) {
		require.NoError(t, err)
		out = append(out, l)
	}
	return out
}

// requireNoSession checks that st holds neither session id nor a
// temporary directory.
func requireNoSession(t testing.TB, st *Store, id session.SessionID) {
	t.Helper()
	_, err := st.Load(context.Background(), id)
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	entries, err := st.fs.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), layout.TmpDirPrefix), "temporary directory %s left behind", e.Name())
	}
}

// TestImportCopiesVerbatim: a session with full and delta records, some
// of them archived by compaction, copied line by line into another store
// is the same session byte for byte, with a free lease above its records'
// generations and a summary.
func TestImportCopiesVerbatim(t *testing.T) {
	ctx := context.Background()
	src, dst := openTestStore(t), openTestStore(t)
	const id = session.SessionID("imported")
	w := fltCreate(t, src, id, 12)
	require.NoError(t, w.Release(ctx))
	for range 2 { // generations 2 and 3 in the records
		w, err := src.Acquire(ctx, id, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		_, err = w.Append(ctx, w.Revision(), plSnapshot(id, w.Revision()+1, 0))
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	rep, err := src.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 3}, 0)
	require.NoError(t, err)
	require.Positive(t, rep.RevisionsTrimmed, "some revisions come from the archives")
	lines := collectLines(t, src, id)
	require.Len(t, lines, 14)

	n, err := dst.Import(ctx, id, src.RecordLines(ctx, id), nil)
	require.NoError(t, err)
	require.Equal(t, 14, n)
	require.Equal(t, lines, collectLines(t, dst, id))
	var a, b bytes.Buffer
	require.NoError(t, src.Export(ctx, id, &a, false))
	require.NoError(t, dst.Export(ctx, id, &b, false))
	require.Equal(t, a.String(), b.String())
	vrep, err := dst.Verify(ctx)
	require.NoError(t, err)
	require.True(t, vrep.OK(), "%+v", vrep)
	require.Equal(t, uint64(14), vrep.Sessions[0].Revision)
	_, ok := logfile.ReadSummary(dst.fs, id)
	require.True(t, ok, "a summary was written")
	page, err := dst.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, uint64(14), page.Items[0].Revision)

	ls, err := dst.Lease(ctx, id)
	require.NoError(t, err)
	require.Equal(t, summary.LeaseFree, ls.State)
	require.Greater(t, ls.Generation, uint64(3), "the lease is above the records' generations")
	w2, err := dst.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Greater(t, w2.Generation(), ls.Generation)
	_, err = w2.Append(ctx, 14, plSnapshot(id, 15, 0))
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx))

	_, err = dst.Import(ctx, id, seqOf(lines), nil)
	require.ErrorIs(t, err, sessionstore.ErrExists)
	ids, err := dst.IDs(ctx)
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{id}, ids)
}

// TestImportRefuses: a line that fails any check imports nothing, and
// says where.
func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("refused")
	good := fixtureDeltaRecords(t, string(id), "fdddFd")
	with := func(i int, l []byte) [][]byte {
		out := slices.Clone(good)
		out[i] = l
		return out
	}
	other := fixtureRecords(t, "someone-else", 2, gen1)
	back := fixtureRecords(t, string(id), 3, func(r int) uint64 { return uint64(4 - r) })
	for _, tc := range []struct {
		name    string
		lines   [][]byte
		wantErr error
		wantRev uint64
	}{
		{"checksum", with(2, flipByte(good[2], 40)), sessionstore.ErrCorrupt, 3},
		{"no newline", with(5, good[5][:len(good[5])-1]), sessionstore.ErrCorrupt, 6},
		{"two lines in one", with(1, append(slices.Clone(good[1]), good[2]...)), sessionstore.ErrCorrupt, 2},
		{"missing revision", append(slices.Clone(good[:2]), good[3:]...), sessionstore.ErrCorrupt, 4},
		{"not from revision 1", good[1:], sessionstore.ErrCorrupt, 2},
		{"delta does not rebuild", with(3, spoilDelta(t, good[3])), sessionstore.ErrCorrupt, 4},
		{"another session", other, sessionstore.ErrCorrupt, 1},
		{"generation goes back", back, sessionstore.ErrCorrupt, 2},
		{"nothing", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openTestStore(t)
			n, err := st.Import(ctx, id, seqOf(tc.lines), nil)
			require.Error(t, err)
			require.Zero(t, n)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, tc.wantRev, ce.Revision, "%v", err)
				require.Equal(t, layout.LogPath(id), ce.Path)
			}
			requireNoSession(t, st, id)
		})
	}
	// Fixtures of other programs' logs: a newer program's record is
	// refused, a gap a repair left is copied as it is.
	fixtureLines := func(name string) [][]byte {
		return bytes.SplitAfter(toolFixture(t, name), []byte("\n"))
	}
	t.Run("a newer program's record", func(t *testing.T) {
		st := openTestStore(t)
		lines := fixtureLines("newer-format-v5")
		_, err := st.Import(ctx, "newer-format-v5", seqOf(lines[:len(lines)-1]), nil)
		var ne *sessionstore.NewerRecordError
		require.ErrorAs(t, err, &ne)
		require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
		requireNoSession(t, st, "newer-format-v5")
	})
	t.Run("a gap in the middle", func(t *testing.T) {
		st := openTestStore(t)
		lines := fixtureLines("repaired-gap")
		lines = lines[:len(lines)-1] // the empty piece after the last newline
		n, err := st.Import(ctx, "repaired-gap", seqOf(lines), nil)
		require.NoError(t, err)
		require.Equal(t, len(lines), n)
		require.Equal(t, lines, collectLines(t, st, "repaired-gap"))
		_, err = openTestStore(t).Import(ctx, "repaired-gap", seqOf(lines[:4]), nil) // revisions 1-3 and the gap of 4-5
		require.ErrorIs(t, err, sessionstore.ErrRevisionsMissing, "a log does not end in a gap")
	})
	t.Run("source error", func(t *testing.T) {
		st := openTestStore(t)
		boom := errors.New("source gone")
		_, err := st.Import(ctx, id, func(yield func([]byte, error) bool) {
			if yield(good[0], nil) {
				yield(nil, boom)
			}
		}, nil)
		require.ErrorIs(t, err, boom)
		requireNoSession(t, st, id)
	})
	t.Run("good", func(t *testing.T) {
		st := openTestStore(t)
		n, err := st.Import(ctx, id, seqOf(good), nil)
		require.NoError(t, err)
		require.Equal(t, len(good), n)
		require.Equal(t, good, collectLines(t, st, id))
	})
}

// TestFaultImport faults each call an import makes, in turn: Import fails
// (or, for calls whose failure does not matter, succeeds), and leaves no
// session or a whole one — with its lease free — and no temporary
// directory; a power loss afterwards does not change that, and an
// acknowledged import survives it.
func TestFaultImport(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("flt-import")
	var lines [][]byte
	{
		src := openTestStore(t)
		w := fltCreate(t, src, id, 6)
		require.NoError(t, w.Release(ctx))
		lines = collectLines(t, src, id)
	}
	named := map[string]vfs.Fault{
		"mkdir":        {Op: vfs.OpMkdir},
		"log open":     {Op: vfs.OpOpen, Match: isLogFile},
		"log write":    {Op: vfs.OpWrite, Match: isLogFile, ShortWrite: 100},
		"log sync":     {Op: vfs.OpDatasync, Match: isLogFile},
		"syncdir temp": {Op: vfs.OpSyncDir, Match: func(n string) bool { return strings.HasPrefix(n, layout.TmpDirPrefix) }},
		"rename":       {Op: vfs.OpRenameNoReplace},
		"syncdir root": {Op: vfs.OpSyncDir, Match: func(n string) bool { return n == "." }},
	}
	wantWhole := map[string]bool{"syncdir root": true}
	type tc struct {
		name  string
		fault vfs.Fault
	}
	var cases []tc
	for _, name := range slices.Sorted(maps.Keys(named)) {
		cases = append(cases, tc{name, named[name]})
	}
	{
		e := fltOnSim(vfs.NewSim())
		_, err := e.st.Import(ctx, id, seqOf(lines), nil)
		require.NoError(t, err)
		for _, c := range fltCalls(e.faulty) {
			cases = append(cases, tc{fmt.Sprintf("%s#%d", c.op, c.k), vfs.Fault{Op: c.op, After: c.k}})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := fltOpen(t, "sim", false)
			e.faulty.Inject(c.fault)
			n, err := e.st.Import(ctx, id, seqOf(lines), nil)
			require.Equal(t, 1, e.faulty.Fired(c.fault.Op), "the fault fired")
			after := e.sim.Snapshot()
			e.faulty.Clear()
			whole := fltImportOutcome(t, e.st, id, lines, err)
			if _, ok := named[c.name]; ok {
				require.Error(t, err, "a failed %s fails Import", c.name)
				require.Equal(t, wantWhole[c.name], whole, "after a failed %s", c.name)
			}
			if err == nil {
				require.Equal(t, len(lines), n)
			}
			crashes := []*vfs.Sim{after.CrashDurableOnly(), after.CrashAll()}
			for seed := range uint64(3) {
				crashes = append(crashes, after.Crash(crashtest.Rand(0x1e, seed)))
			}
			for i, crashed := range crashes {
				ce := fltOnSim(crashed)
				_, lerr := ce.st.Load(ctx, id)
				if errors.Is(lerr, sessionstore.ErrNotFound) {
					require.Error(t, err, "crash %d: an acknowledged import is lost", i)
				} else {
					require.NoError(t, lerr, "crash %d: a session after a crash is whole", i)
					require.Equal(t, lines, collectLines(t, ce.st, id), "crash %d", i)
				}
				require.NoError(t, ce.st.Close())
			}
		})
	}
}

// fltImportOutcome checks what an Import that returned err left: no
// session and nothing else (it returns false), or the whole session with
// a free lease (true).
func fltImportOutcome(t *testing.T, st *Store, id session.SessionID, lines [][]byte, err error) (whole bool) {
	t.Helper()
	ctx := context.Background()
	entries, derr := st.fs.ReadDir(".")
	require.NoError(t, derr)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), layout.TmpDirPrefix), "temporary directory %s left behind", e.Name())
	}
	_, lerr := st.Load(ctx, id)
	if errors.Is(lerr, sessionstore.ErrNotFound) {
		require.Error(t, err, "Import succeeded but the session is missing")
		n, err := st.Import(ctx, id, seqOf(lines), nil)
		require.NoError(t, err, "nothing there: importing again works")
		require.Equal(t, len(lines), n)
		return false
	}
	require.NoError(t, lerr)
	require.Equal(t, lines, collectLines(t, st, id))
	w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
	require.NoError(t, err, "the importer's lease was released")
	require.NoError(t, w.Release(ctx))
	return true
}

// TestOpenExisting: a root that is missing or not a directory is
// ErrNoStore, and nothing is created.
func TestOpenExisting(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", dir + "/missing", "does not exist"},
		{"below a file", dir + "/file/store", "above it is not a directory"},
		{"a file", dir + "/file", "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(dir+"/file", nil, 0o600))
			_, err := OpenExisting(tc.path, Options{})
			require.ErrorIs(t, err, ErrNoStore)
			require.ErrorContains(t, err, tc.want)
			_, err = os.Stat(dir + "/missing")
			require.ErrorIs(t, err, os.ErrNotExist, "nothing created")
		})
	}
	st, err := OpenExisting(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

// TestImportAboveTheStoresCap: records written under a cap above the
// importing store's are imported, and the session records a cap of its
// largest record, so that this store reads, verifies and goes on from it.
func TestImportAboveTheStoresCap(t *testing.T) {
	ctx := context.Background()
	src := openTestStoreWith(t, Options{MaxRecordBytes: 4 << 20})
	dst := openTestStoreWith(t, Options{MaxRecordBytes: 256 << 10})
	s, input := writeWide(t, src, "wide")

	n, err := dst.Import(ctx, "wide", src.RecordLines(ctx, "wide"), nil)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	got, err := layout.RecordedCap(dst.fs, layout.SessionDir("wide"))
	require.NoError(t, err)
	require.Greater(t, got, len(input), "the session's cap is at least its largest record")
	require.Less(t, got, 4<<20, "and no more than that")
	rec, err := dst.Load(ctx, "wide")
	require.NoError(t, err)
	require.Len(t, string(rec.Snapshot.Messages[0].Parts[0].Input), len(input))

	w, err := dst.Acquire(ctx, "wide", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "thanks", sessiontest.Epoch)))
	_, err = w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	// Under the store's own cap, the store's cap is recorded.
	small := sessiontest.New("narrow")
	w, err = src.Create(ctx, sessiontest.Snap(t, small), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	_, err = dst.Import(ctx, "narrow", src.RecordLines(ctx, "narrow"), nil)
	require.NoError(t, err)
	got, err = layout.RecordedCap(dst.fs, layout.SessionDir("narrow"))
	require.NoError(t, err)
	require.Equal(t, 256<<10, got)
}
