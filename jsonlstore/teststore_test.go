package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// Every test that opens a store through openTestStore (or hands one to
// verifyAtCleanup) is a corruption check too: when it ends, Verify must
// find every session sound (as bbolt's btesting checks every test's
// database). A test that damages a store on purpose says so by opening it
// with openUncheckedStore.

// openTestStore opens a store in a fresh t.TempDir() with Options{},
// closed at cleanup and verified then (verifyAtCleanup).
func openTestStore(t testing.TB) *Store {
	t.Helper()
	return openTestStoreWith(t, Options{})
}

// openTestStoreWith is openTestStore with opts.
func openTestStoreWith(t testing.TB, opts Options) *Store {
	t.Helper()
	st := openUncheckedStoreWith(t, opts)
	verifyAtCleanup(t, st)
	return st
}

// openUncheckedStore opens a store in a fresh t.TempDir(), closed at
// cleanup but not verified: for tests that leave it damaged on purpose.
func openUncheckedStore(t testing.TB) *Store {
	t.Helper()
	return openUncheckedStoreWith(t, Options{})
}

// openUncheckedStoreWith is openUncheckedStore with opts, and with the
// search index unless opts has one (as the CLI opens stores).
func openUncheckedStoreWith(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Search == nil {
		opts = withSearch(opts)
	}
	st, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// verifyAtCleanup fails t at cleanup, after st is closed (cleanups
// registered later run first), unless Verify finds every session of st's
// root sound: no problem, none unreadable. It reads through a fresh Store
// on st's root and file system with st's options, so it does not matter
// whether the test closed st. It says nothing when t has failed already,
// so that a failure is not buried under what it left behind.
func verifyAtCleanup(t testing.TB, st *Store) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		v := newStore(st.dir, nil, st.fs, st.leases, st.opts)
		if st.osRoot != nil { // st's os.Root closed with st: open the root again
			var err error
			if v, err = Open(st.dir, st.opts); err != nil {
				t.Errorf("verify the store at the end of the test: %v", err)
				return
			}
		}
		defer v.Close()
		rep, err := v.Verify(context.Background())
		if err != nil {
			t.Errorf("verify the store at the end of the test: %v", err)
			return
		}
		if !rep.OK() {
			t.Errorf("the store is not sound at the end of the test (openUncheckedStore for a test that damages it on purpose):\n%s", verifyProblems(rep))
		}
	})
}

// verifyProblems lists the problems and unreadable sessions of rep, one a
// line.
func verifyProblems(rep sessionstore.VerifyReport) string {
	var b strings.Builder
	for _, s := range rep.Sessions {
		for _, f := range s.Problems {
			fmt.Fprintf(&b, "  %s: %s\n", s.ID, f)
		}
	}
	for _, u := range rep.Unreadable {
		fmt.Fprintf(&b, "  unreadable: %+v\n", u)
	}
	return b.String()
}

// cleanupTB is a testing.TB whose cleanups run when the test says so, and
// which keeps what Errorf reports.
type cleanupTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (c *cleanupTB) Helper()           {}
func (c *cleanupTB) Cleanup(fn func()) { c.cleanups = append(c.cleanups, fn) }
func (c *cleanupTB) Failed() bool      { return len(c.errors) > 0 }
func (c *cleanupTB) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

func (c *cleanupTB) runCleanups() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}

// TestVerifyAtCleanupHasTeeth: a store left sound passes the check at
// cleanup; one whose log was damaged fails it, naming the problem, also
// when the test closed the store itself; on a real root and on a Sim.
func TestVerifyAtCleanupHasTeeth(t *testing.T) {
	for _, backend := range []string{"os", "sim"} {
		for _, damage := range []bool{false, true} {
			t.Run(fmt.Sprintf("backend=%s/damaged=%v", backend, damage), func(t *testing.T) {
				tb := &cleanupTB{TB: t}
				var st *Store
				var fsys vfs.FS
				if backend == "os" {
					var err error
					st, err = Open(t.TempDir(), Options{})
					require.NoError(t, err)
					fsys = vfs.OS(st.osRoot)
				} else {
					sim := vfs.NewSim()
					st = newStore(fltRoot, nil, sim, newSimLeaser(sim, fltRoot), Options{})
					fsys = sim
				}
				verifyAtCleanup(tb, st)
				toolSession(t, st, "v", 4)
				if damage {
					log, err := vfs.ReadFile(fsys, layout.LogPath("v"), 1<<20)
					require.NoError(t, err)
					log[len(log)/3] ^= 0x01
					f, err := fsys.OpenFile(layout.LogPath("v"), os.O_WRONLY|os.O_TRUNC, 0)
					require.NoError(t, err)
					_, err = f.Write(log)
					require.NoError(t, err)
					require.NoError(t, f.Close())
				}
				require.NoError(t, st.Close())
				tb.runCleanups()
				if !damage {
					require.Empty(t, tb.errors)
					return
				}
				require.Len(t, tb.errors, 1)
				require.Contains(t, tb.errors[0], "the store is not sound at the end of the test")
				require.Contains(t, tb.errors[0], "v: v/log.jsonl offset ")
			})
		}
	}
}

// swapFS makes st, and every room of it, read and write through fsys from
// now on (a test's fault or hook wrapper around the store's file system).
func swapFS(st *Store, fsys vfs.FS) { st.fs, st.root.FS = fsys, fsys }
