package jsonlstore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// tree lists every path under root with its mode, to prove that a refused
// operation wrote nothing.
func tree(t *testing.T, root string) map[string]fs.FileMode {
	out := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.Mode()
		return nil
	}))
	return out
}

// sessionsTree is tree without the catalog, which is no session's: a
// listing may rewrite it (internal/catalogfile) where readers modify nothing else.
func sessionsTree(t *testing.T, root string) map[string]fs.FileMode {
	out := tree(t, root)
	for p := range out {
		if p == CatalogDir || strings.HasPrefix(p, CatalogDir+string(filepath.Separator)) {
			delete(out, p)
		}
	}
	return out
}

func TestBadInputWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("good")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer w.Release(ctx)
	before := tree(t, st.Dir())
	logBefore, err := os.ReadFile(filepath.Join(st.Dir(), "good", LogFile))
	require.NoError(t, err)

	for _, id := range []string{"..", "../x", "a/b", "", strings.Repeat("a", 300), "a\x00b", ".hidden", "with space", `a\b`, "-lead"} {
		cfg := sessiontest.Config("placeholder")
		s, err := session.New(cfg)
		require.NoError(t, err)
		snap := sessiontest.Snap(t, s)
		snap.ID = session.SessionID(id)
		_, err = st.Create(ctx, snap, sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "id %q", id)
		_, err = st.Acquire(ctx, session.SessionID(id), sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "id %q", id)
		_, err = st.Load(ctx, session.SessionID(id))
		require.ErrorIs(t, err, sessionstore.ErrInvalidID, "id %q", id)
	}

	mismatched := sessiontest.Snap(t, sessiontest.New("other"))
	_, err = w.Append(ctx, 1, mismatched)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)

	// A record over the cap: a tool call whose input (JSON, never kept out
	// of line) is larger than the cap.
	huge := sessiontest.New("good")
	input := append(append([]byte(`"`), strings.Repeat("x", sessionstore.DefaultMaxRecordBytes)...), '"')
	require.NoError(t, huge.AppendMessage(session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "write", Input: input}}}))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, huge))
	require.ErrorIs(t, err, sessionstore.ErrTooLarge)

	invalid := sessiontest.Snap(t, sessiontest.New("good"))
	invalid.State = "exploding"
	_, err = w.Append(ctx, 1, invalid)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	invalid = sessiontest.Snap(t, sessiontest.New("good"))
	invalid.Authority = &session.Authority{Capabilities: []string{"root.everything"}}
	_, err = w.Append(ctx, 1, invalid)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	invalid = sessiontest.Snap(t, sessiontest.New("good"))
	invalid.EnvironmentRef = session.EnvironmentRef{}
	_, err = w.Append(ctx, 1, invalid)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)

	require.Equal(t, before, tree(t, st.Dir()), "refused input left files behind")
	logAfter, err := os.ReadFile(filepath.Join(st.Dir(), "good", LogFile))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter)

	// The writer is still usable after refusals (they are not I/O errors).
	rev, err := w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.New("good")))
	require.NoError(t, err)
	require.Equal(t, uint64(2), rev)
}

func TestPermissions(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("perm")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.New("perm")))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	for p, mode := range tree(t, st.Dir()) {
		if p == "." {
			continue
		}
		if mode.IsDir() {
			require.Equal(t, fs.FileMode(0o700), mode.Perm(), p)
		} else {
			require.Equal(t, fs.FileMode(0o600), mode.Perm(), p)
		}
	}
}

func TestSymlinksRefused(t *testing.T) {
	ctx := context.Background()
	for _, target := range []string{"session-dir", LogFile, "lease.lock", "lease.json", SummaryFile} {
		t.Run(target, func(t *testing.T) {
			st := openUncheckedStore(t) // symlinks planted on purpose
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")
			require.NoError(t, os.WriteFile(victim, []byte("do not touch"), 0o600))
			id := session.SessionID("sym")
			if target == "session-dir" {
				require.NoError(t, os.Mkdir(filepath.Join(outside, "real"), 0o700))
				require.NoError(t, os.Symlink(filepath.Join(outside, "real"), filepath.Join(st.Dir(), "sym")))
			} else {
				w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New("sym")), sessionstore.AcquireOptions{})
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))
				p := filepath.Join(st.Dir(), "sym", target)
				require.NoError(t, os.Remove(p))
				require.NoError(t, os.Symlink(victim, p))
			}
			_, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
			require.Error(t, err)
			if target == "session-dir" || target == LogFile {
				_, err = st.Load(ctx, id)
				require.Error(t, err)
			}
			b, err := os.ReadFile(victim)
			require.NoError(t, err)
			require.Equal(t, "do not touch", string(b))
			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			require.LessOrEqual(t, len(entries), 2, "nothing created outside the root")
		})
	}
}

func TestMidLogCorruption(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	s := sessiontest.New("mid")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for r := uint64(1); r < 10; r++ {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "m", sessiontest.Epoch)))
		_, err := w.Append(ctx, r, sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	logFile := filepath.Join(st.Dir(), "mid", LogFile)
	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	off := int64(len(strings.Join(lines[:4], "")))
	data[off+int64(len(lines[4])/2)] ^= 0x01 // flip a bit in revision 5
	require.NoError(t, os.WriteFile(logFile, data, 0o600))

	rec, err := st.Load(ctx, "mid")
	require.NoError(t, err, "the latest still loads")
	require.Equal(t, uint64(10), rec.Revision)
	_, err = st.LoadRevision(ctx, "mid", 5)
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, off, ce.Offset)
	r6, err := st.LoadRevision(ctx, "mid", 6)
	require.NoError(t, err)
	require.Equal(t, uint64(6), r6.Revision)
	var last error
	for _, err := range st.History(ctx, "mid") {
		last = err
	}
	require.ErrorAs(t, last, &ce)
	require.Equal(t, off, ce.Offset)
	w, err = st.Acquire(ctx, "mid", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.Zero(t, w.Recovery().TailBytes)
	require.NoError(t, w.Release(ctx))
	after, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, data, after, "neither reading nor acquiring removes anything")
	_ = sessnap.SchemaVersion
}
