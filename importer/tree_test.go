//go:build unix

package importer_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
)

// hostileTree lays out a directory holding a transcript, and beside it a
// named pipe, a link to /dev/zero, a link to a transcript outside the
// directory and a link to the transcript inside it, each named as a
// transcript.
func hostileTree(t *testing.T) (dir string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "tree")
	require.NoError(t, os.Mkdir(dir, 0o755))
	line := `{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-01-02T03:04:05Z","message":{"role":"user","content":"hello"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "good.jsonl"), []byte(line), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(base, "outside.jsonl"), []byte(line), 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.jsonl"), 0o600))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.jsonl")))
	require.NoError(t, os.Symlink("../outside.jsonl", filepath.Join(dir, "out.jsonl")))
	require.NoError(t, os.Symlink("good.jsonl", filepath.Join(dir, "in.jsonl")))
	return dir
}

// TestTreeOpensOnlyRegularFilesInside: a tree's FS opens a named pipe
// without blocking (no writer ever comes) and refuses it; it refuses the
// links that lead out of the tree, to a device or to a file; it follows a
// link that stays inside. A blocking open of the pipe would hang this
// test until the test binary's deadline.
func TestTreeOpensOnlyRegularFilesInside(t *testing.T) {
	dir := hostileTree(t)
	tree, err := importer.OpenTree(dir)
	require.NoError(t, err)
	defer tree.Close()
	fsys := tree.FS(context.Background())

	_, err = fsys.Open("fifo.jsonl")
	require.ErrorIs(t, err, importer.ErrNotRegular)
	require.ErrorContains(t, err, "a named pipe")
	for _, name := range []string{"zero.jsonl", "out.jsonl"} {
		_, err = fsys.Open(name)
		require.Error(t, err, name)
		require.ErrorContains(t, err, "escapes", name)
	}
	f, err := fsys.Open("in.jsonl")
	require.NoError(t, err, "a link inside the tree is followed")
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NotEmpty(t, b)
	require.NoError(t, f.Close())

	// A listing keeps only the regular files: no link, no pipe.
	names, err := importer.RegularFiles(fsys, ".", func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, []string{"good.jsonl"}, names)

	// The converters' loaders read through the tree: the pipe and the
	// links out fail at once, the transcript loads.
	for _, name := range []string{"fifo.jsonl", "zero.jsonl", "out.jsonl"} {
		_, err := claudecode.Load(fsys, name, claudecode.Options{})
		require.Error(t, err, name)
	}
	tr, err := claudecode.Load(fsys, "good.jsonl", claudecode.Options{})
	require.NoError(t, err)
	require.Len(t, tr.Messages, 1)
}

// TestParseFileRefusesDevices: whatever the fs.FS, ParseFile reads only a
// regular file. Through os.DirFS, which follows every link, a transcript
// linked to /dev/zero was read for ever (a line too long, skipped, then
// the next); it is refused before a byte is read.
func TestParseFileRefusesDevices(t *testing.T) {
	dir := hostileTree(t)
	_, err := claudecode.Load(os.DirFS(dir), "zero.jsonl", claudecode.Options{})
	require.ErrorIs(t, err, importer.ErrNotRegular)
	require.ErrorContains(t, err, "a character device")
}

// TestTreeReadsStopWithTheContext: once the tree's context is done, a
// file being read fails at its next read with the context's cause, and
// nothing more opens.
func TestTreeReadsStopWithTheContext(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.jsonl"), make([]byte, 1<<20), 0o600))
	tree, err := importer.OpenTree(dir)
	require.NoError(t, err)
	defer tree.Close()
	stop := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(context.Background())
	fsys := tree.FS(ctx)
	f, err := fsys.Open("big.jsonl")
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	_, err = f.Read(buf)
	require.NoError(t, err)
	cancel(stop)
	_, err = f.Read(buf)
	require.ErrorIs(t, err, stop)
	_, err = io.Copy(io.Discard, f) // no WriteTo that would go round Read
	require.ErrorIs(t, err, stop)
	_, err = fsys.Open("big.jsonl")
	require.ErrorIs(t, err, stop)
	_, err = fs.ReadDir(fsys, ".")
	require.ErrorIs(t, err, stop)
}
