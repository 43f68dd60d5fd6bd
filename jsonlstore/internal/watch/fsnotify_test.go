package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run the real event source, fsnotify, on temporary
// directories.

// TestSourceClose: with the real source, Current's barrier arrives (the
// index can be confirmed current); Close stops the watcher's goroutine,
// fsnotify's goroutine and removes the barrier directory.
func TestSourceClose(t *testing.T) {
	src, err := NewSource()
	require.NoError(t, err)
	fsrc := src.(*fsnotifySource)
	require.NotEmpty(t, fsrc.dir, "a barrier directory")
	d := newFakeDisk()
	d.create("a", 1)
	w := Start(d, Options{Dir: t.TempDir(), Source: src, PollInterval: time.Hour})
	ch, err := w.Subscribe(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(1), (<-ch).Summary.Revision)
	require.True(t, w.Current(context.Background()), "the barrier's event arrives")
	w.Close()
	for range ch { // closed with the watcher
	}
	select {
	case <-w.done:
	default:
		t.Fatal("watcher goroutine still running after Close")
	}
	_, open := <-fsrc.w.Events
	require.False(t, open, "fsnotify's goroutine is gone")
	_, err = os.Stat(fsrc.dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the barrier directory is removed")
}

// TestWatchSweepsBarrierDirs: barrier directories of processes that are
// gone are removed once old; others are left alone.
func TestWatchSweepsBarrierDirs(t *testing.T) {
	tmp := t.TempDir()
	const gone = 1 << 30 // beyond any pid_max
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
		return p
	}
	dead := mk(fmt.Sprintf("%s%d-1", barrierDirPrefix, gone), 2*time.Minute)
	young := mk(fmt.Sprintf("%s%d-2", barrierDirPrefix, gone), time.Second)
	mine := mk(fmt.Sprintf("%s%d-3", barrierDirPrefix, os.Getpid()), time.Hour)
	other := mk("jsonlstore-watch-unrelated", time.Hour)
	sweepBarrierDirs(tmp, now)
	require.NoDirExists(t, dead)
	require.DirExists(t, young)
	require.DirExists(t, mine)
	require.DirExists(t, other)
}
