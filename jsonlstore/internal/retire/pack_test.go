package retire

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// mustArea returns an area on a Sim holding session "s1" (a log, a lease
// lock, a blob directory) and a locker that refuses names in held.
func mustArea(t *testing.T, held map[string]bool) (*Area, *vfs.Sim) {
	t.Helper()
	sim := vfs.NewSim()
	require.NoError(t, sim.Mkdir("s1", 0o700))
	require.NoError(t, sim.Mkdir("s1/blobs", 0o700))
	for name, body := range map[string]string{
		"s1/log.jsonl": "line one\nline two\n", "s1/lease.lock": "", "s1/blobs/abc": "blob bytes",
	} {
		f, err := sim.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		_, err = f.Write([]byte(body))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	root := &layout.Root{FS: sim, Dir: "/sim", Now: func() time.Time { return time.Unix(1e9, 0) }}
	return New(root, func(name string) (func(), bool, error) { return func() {}, held[name], nil }), sim
}

func choose(id session.SessionID) Choose {
	return func() (summary.Summary, string, error) { return summary.Summary{ID: id, Title: "t"}, "named", nil }
}

func TestRetireRestoreSim(t *testing.T) {
	ctx := context.Background()
	a, sim := mustArea(t, nil)
	before := sim.Tree()
	rs, err := a.Retire(ctx, "s1", choose("s1"))
	require.NoError(t, err)
	require.Equal(t, int64(len("line one\nline two\n")+len("blob bytes")), rs.Bytes)
	_, err = sim.Lstat("s1")
	require.Error(t, err)
	h, err := a.Verify("s1")
	require.NoError(t, err)
	require.Equal(t, "lease.lock", h.Entries[0].Name, "lease.lock first")
	require.Equal(t, "t", h.Summary.Title)

	_, err = a.Restore(ctx, "s1")
	require.NoError(t, err)
	log, err := sim.ReadFile("s1/log.jsonl")
	require.NoError(t, err)
	require.Equal(t, "line one\nline two\n", string(log))
	after := sim.Tree()
	require.Subset(t, after, before)
	_, err = a.Restore(ctx, "s1")
	require.ErrorIs(t, err, ErrNotRetired)
}

func TestRetireHeld(t *testing.T) {
	a, sim := mustArea(t, map[string]bool{"s1/lease.lock": true})
	_, err := a.Retire(context.Background(), "s1", choose("s1"))
	require.ErrorIs(t, err, ErrHeld)
	_, err = sim.Lstat(PackPath("s1"))
	require.Error(t, err, "no pack")
}

func TestRetireBusy(t *testing.T) {
	a, _ := mustArea(t, map[string]bool{LockFile: true})
	_, err := a.Retire(context.Background(), "s1", choose("s1"))
	require.ErrorIs(t, err, ErrBusy)
}

// TestPackDamage flips each byte of a pack in turn (a sample) and requires
// every reader to refuse it: zstd's checksums and the members' SHA-256
// leave nothing through.
func TestPackDamage(t *testing.T) {
	ctx := context.Background()
	a, sim := mustArea(t, nil)
	_, err := a.Retire(ctx, "s1", choose("s1"))
	require.NoError(t, err)
	good, err := sim.ReadFile(PackPath("s1"))
	require.NoError(t, err)
	for i := 0; i < len(good); i += 1 + len(good)/97 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		r, err := NewReader(bytes.NewReader(bad), "pack", "s1")
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Close()
		}
		require.ErrorIs(t, err, ErrCorrupt, "byte %d flipped", i)
	}
	_, err = NewReader(bytes.NewReader(good), "pack", "other")
	require.ErrorIs(t, err, ErrCorrupt, "another session's pack")
}

func TestConflict(t *testing.T) {
	ctx := context.Background()
	a, sim := mustArea(t, nil)
	_, err := a.Retire(ctx, "s1", choose("s1"))
	require.NoError(t, err)
	// A new session of the same ID, with another history.
	require.NoError(t, sim.Mkdir("s1", 0o700))
	for _, name := range []string{"s1/log.jsonl", "s1/lease.lock"} {
		f, err := sim.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
		require.NoError(t, err)
		_, _ = f.Write([]byte("other\n"))
		require.NoError(t, f.Close())
	}
	_, err = a.Restore(ctx, "s1")
	require.ErrorIs(t, err, ErrConflict)
	_, err = a.Retire(ctx, "s1", choose("s1"))
	require.ErrorIs(t, err, ErrConflict)
	_, err = a.Verify("s1")
	require.NoError(t, err, "the pack is untouched")
}

func TestJournalTornTail(t *testing.T) {
	sim := vfs.NewSim()
	require.NoError(t, sim.Mkdir(Dir, 0o700))
	require.NoError(t, appendEvent(sim, Event{Op: OpRetire, ID: "a"}))
	f, err := sim.OpenFile(JournalFile, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte(`{"v":1,"op":"retire","id":"b"`)) // torn
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, appendEvent(sim, Event{Op: OpRestore, ID: "a"}))
	var got []string
	var bad int
	for ev, err := range Events(sim) {
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			bad++
			continue
		}
		got = append(got, ev.Op+" "+string(ev.ID))
	}
	require.Equal(t, []string{"retire a", "restore a"}, got)
	require.Equal(t, 1, bad, "the torn line, now followed by another, is reported")
}
