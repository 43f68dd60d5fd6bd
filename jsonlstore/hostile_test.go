package jsonlstore

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Hostile session directories: what a directory restored from a backup or
// received from someone else may hold. Each case gets a clear error (or is
// ignored), nothing hangs, nothing outside the session is touched, and no
// reader allocates beyond the record cap. SECURITY.md maps threats to these
// tests.

// within runs fn and fails t if it has not returned after d: the hostile
// inputs here must never make a call block.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s blocked for %v", what, d)
	}
}

// storeWithLog returns a store holding session "clean" from the committed
// fixture, with the given options.
func storeWithLog(t *testing.T, log []byte, opts Options) (*Store, string) {
	root := t.TempDir()
	dir := filepath.Join(root, "clean")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), log, 0o600))
	st, err := Open(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func cleanFixture(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(fixtureRoot, "clean", LogFile))
	require.NoError(t, err)
	return b
}

// TestPlantedSpecialFilesRefused: a FIFO (or socket) where a store file
// belongs would block a reader forever on open; each is refused at once
// with vfs.ErrNotRegular, by readers, listing, verify and acquire alike;
// a listing reports a session whose log is one (Page.Unreadable) and goes
// on.
func TestPlantedSpecialFilesRefused(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{LogFile, SummaryFile, ArchiveDir + "/" + archive.ManifestFile} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			st, dir := storeWithLog(t, cleanFixture(t), Options{})
			if strings.HasPrefix(name, ArchiveDir) {
				w, err := st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
				require.NoError(t, err)
				_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 2})
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))
			}
			p := filepath.Join(dir, filepath.FromSlash(name))
			_ = os.Remove(p)
			require.NoError(t, syscall.Mkfifo(p, 0o600))

			within(t, 10*time.Second, "load", func() {
				_, err := st.Load(ctx, "clean")
				if name == LogFile {
					require.ErrorIs(t, err, vfs.ErrNotRegular)
				} else {
					require.NoError(t, err, "the log alone answers Load")
				}
			})
			within(t, 10*time.Second, "history", func() {
				var herr error
				for _, err := range st.History(ctx, "clean") {
					herr = err
				}
				if name != SummaryFile {
					require.ErrorIs(t, herr, vfs.ErrNotRegular)
				}
			})
			within(t, 10*time.Second, "list", func() {
				page, err := st.List(ctx, summary.Query{})
				require.NoError(t, err, "a planted file never fails a listing")
				if name == LogFile {
					require.Empty(t, page.Items)
					require.Len(t, page.Unreadable, 1, "the session is reported, not left out")
					require.Equal(t, session.SessionID("clean"), page.Unreadable[0].ID)
					require.ErrorIs(t, page.Unreadable[0].Err, vfs.ErrNotRegular)
				} else {
					require.Len(t, page.Items, 1, "the log alone answers List")
					require.Empty(t, page.Unreadable)
				}
			})
			within(t, 10*time.Second, "verify", func() {
				rep, err := st.Verify(ctx, "clean")
				switch {
				case err != nil:
					require.ErrorIs(t, err, vfs.ErrNotRegular)
				case name != SummaryFile:
					require.False(t, rep.OK(), "verify reports the planted file")
				}
			})
			within(t, 10*time.Second, "acquire", func() {
				w, err := st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
				if err == nil {
					require.NoError(t, w.Release(ctx))
				}
				if name == LogFile {
					require.ErrorIs(t, err, vfs.ErrNotRegular)
				}
			})
		})
	}
}

// TestHugeLineBoundedMemory: a log holding a line far beyond the record
// cap — at the end without a newline, at the end with one, or between
// valid records — never makes a reader or recovery hold it in memory.
func TestHugeLineBoundedMemory(t *testing.T) {
	const (
		maxRecord = 64 << 10
		huge      = 16 << 20
		bound     = 6 << 20 // what the readers below may allocate in all
	)
	ctx := context.Background()
	clean := cleanFixture(t)
	lines := bytes.SplitAfter(clean, []byte("\n"))
	junk := bytes.Repeat([]byte("x"), huge)
	cases := []struct {
		name   string
		log    []byte
		latest uint64
	}{
		{"tail without newline", append(bytes.Clone(clean), junk...), 5},
		{"tail with newline", append(append(bytes.Clone(clean), junk...), '\n'), 5},
		{"between records", bytes.Join([][]byte{lines[0], lines[1], junk, []byte("\n"), lines[2], lines[3], lines[4]}, nil), 5},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			st, dir := storeWithLog(t, tt.log, Options{MaxRecordBytes: maxRecord})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			// A line beyond the cap at the end is more than a torn append
			// can leave: corruption for readers and for a holder, found
			// by a bounded read, and nothing is copied or cut.
			tailDamage := tt.name != "between records"
			var ce *sessionstore.CorruptionError
			rec, err := st.Load(ctx, "clean")
			if tailDamage {
				require.ErrorAs(t, err, &ce)
				require.Contains(t, ce.Error(), "more than a torn append can leave")
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.latest, rec.Revision)
			}
			var herr error
			for _, err := range st.History(ctx, "clean") {
				herr = err
			}
			if tt.name == "between records" {
				require.ErrorAs(t, herr, &ce)
				require.Equal(t, int64(len(lines[0])+len(lines[1])), ce.Offset)
			}
			vr, err := st.Verify(ctx, "clean")
			require.NoError(t, err)
			require.False(t, vr.OK())
			_, err = st.List(ctx, summary.Query{})
			require.NoError(t, err)
			w, err := st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
			if tailDamage {
				require.ErrorAs(t, err, &ce)
				_, serr := os.Stat(filepath.Join(dir, ForensicDir))
				require.ErrorIs(t, serr, fs.ErrNotExist, "nothing copied")
			} else {
				require.NoError(t, err)
				require.Zero(t, w.Recovery().TailBytes, "a bad line followed by valid ones is corruption, never removed")
				require.NoError(t, w.Release(ctx))
			}
			runtime.ReadMemStats(&after)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(bound), "readers allocated beyond the cap")
			fi, err := os.Stat(filepath.Join(dir, LogFile))
			require.NoError(t, err)
			require.Equal(t, int64(len(tt.log)), fi.Size(), "nothing removed")
		})
	}
}

// TestDeepJSONRecordRefused: a record whose payload is JSON nested far
// deeper than any snapshot (with a valid checksum, as a hostile file
// would have) is a clear corruption error: encoding/json stops at depth
// 10000, so decoding neither overflows the stack nor runs long.
func TestDeepJSONRecordRefused(t *testing.T) {
	ctx := context.Background()
	const depth = 200_000
	clean := cleanFixture(t)
	payload := `{"id":"clean","messages":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	line := record.Encode(record.Meta{Version: record.Version4, Schema: 1, Rev: 6, Gen: 1, Time: sessiontest.Epoch.Add(time.Hour), Kind: record.KindFull}, []byte(payload))
	st, _ := storeWithLog(t, append(bytes.Clone(clean), line...), Options{})
	start := time.Now()
	_, err := st.Load(ctx, "clean")
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "exceeded max depth")
	require.Less(t, time.Since(start), 5*time.Second)
	rec, err := st.LoadRevision(ctx, "clean", 5)
	require.NoError(t, err, "the records before it still load")
	require.Equal(t, uint64(5), rec.Revision)
}

// TestHostileDirectoryNamesIgnored: entries in the root whose names are
// not valid session IDs (hidden, with spaces or newlines, a leading dash,
// overlong), plain files and symlinks are not sessions: listing skips
// them, and no call reaches them by ID.
func TestHostileDirectoryNamesIgnored(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("real")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	logLine := cleanFixture(t)
	for _, name := range []string{".hidden", "with space", "new\nline", "-dash", strings.Repeat("a", sessionstore.MaxIDLength+1), "_under"} {
		dir := filepath.Join(st.Dir(), name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), logLine, 0o600))
		_, err := st.Load(ctx, session.SessionID(name))
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "%q", name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "plainfile"), logLine, 0o600))
	outside := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(outside, "linked"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "linked", LogFile), logLine, 0o600))
	require.NoError(t, os.Symlink(filepath.Join(outside, "linked"), filepath.Join(st.Dir(), "linked")))

	page, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	var ids []session.SessionID
	for _, s := range page.Items {
		ids = append(ids, s.ID)
	}
	require.Equal(t, []session.SessionID{"real"}, ids)
	_, err = st.Load(ctx, "plainfile")
	require.Error(t, err)
	_, err = st.Load(ctx, "linked")
	require.ErrorIs(t, err, vfs.ErrSymlink)
}

// TestSymlinksInArchiveRefused: archive/ or a file in it replaced by a
// symlink (to a copy outside the store) is never read or written
// through: history fails with ErrSymlink, holders refuse the session,
// and the outside copy is untouched.
func TestSymlinksInArchiveRefused(t *testing.T) {
	ctx := context.Background()
	for _, target := range []string{ArchiveDir, ArchiveDir + "/" + archive.ManifestFile} {
		t.Run(strings.ReplaceAll(target, "/", "_"), func(t *testing.T) {
			st, dir := storeWithLog(t, cleanFixture(t), Options{})
			w, err := st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 2})
			require.NoError(t, err)
			require.NoError(t, w.Release(ctx))

			outside := filepath.Join(t.TempDir(), "copy")
			p := filepath.Join(dir, filepath.FromSlash(target))
			require.NoError(t, os.Rename(p, outside))
			require.NoError(t, os.Symlink(outside, p))
			snapshot := tree(t, filepath.Dir(outside))

			var herr error
			for _, err := range st.History(ctx, "clean") {
				herr = err
			}
			require.ErrorIs(t, herr, vfs.ErrSymlink)
			_, err = st.LoadRevision(ctx, "clean", 1)
			require.ErrorIs(t, err, vfs.ErrSymlink)
			rec, err := st.Load(ctx, "clean")
			require.NoError(t, err, "the latest lives in the log")
			require.Equal(t, uint64(5), rec.Revision)
			if target == ArchiveDir {
				_, err = st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
				require.ErrorIs(t, err, vfs.ErrSymlink, "no holder writes into a session holding a symlink")
			} else {
				_, err = st.Compact(ctx, "clean", maintenance.CompactPolicy{KeepLast: 1}, 0)
				require.Error(t, err, "compaction does not write through the symlink")
			}
			require.Equal(t, snapshot, tree(t, filepath.Dir(outside)), "nothing outside the store changed")
		})
	}
}

// TestHostileSummaryIgnored: summary.json is a cache, never trusted
// blindly: garbage, one beyond its size cap, or a well-formed one that
// was written for another log file (as in a received copy) is ignored,
// and listing reports what the log says.
func TestHostileSummaryIgnored(t *testing.T) {
	ctx := context.Background()
	donor, _ := storeWithLog(t, cleanFixture(t), Options{})
	w, err := donor.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := donor.Load(ctx, "clean")
	require.NoError(t, err)
	rec.Snapshot.Title = "forged title"
	_, err = w.Append(ctx, 5, rec.Snapshot) // writes a summary for revision 6
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	foreign, err := os.ReadFile(filepath.Join(donor.Dir(), "clean", SummaryFile))
	require.NoError(t, err)

	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"garbage", []byte("\x00{not json")},
		{"over its cap", append(bytes.Repeat([]byte(" "), logfile.MaxSummaryBytes), foreign...)},
		{"written for another log", foreign},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, dir := storeWithLog(t, cleanFixture(t), Options{})
			require.NoError(t, os.WriteFile(filepath.Join(dir, SummaryFile), tt.data, 0o600))
			page, err := st.List(ctx, summary.Query{})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			require.Equal(t, uint64(5), page.Items[0].Revision)
			require.NotEqual(t, "forged title", page.Items[0].Title)
			w, err := st.Acquire(ctx, "clean", sessionstore.AcquireOptions{})
			require.NoError(t, err, "a summary of another log is no evidence against this one")
			require.NoError(t, w.Release(ctx))
		})
	}
}
