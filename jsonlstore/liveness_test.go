package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// TestAppendCountsAsHeartbeat: a holder that appends but never
// heartbeats shows as recently active — its lease's heartbeat age (Lease,
// List) stays under a second while it appends ten times a second — and
// it touches lease.lock about once a second for it, not once per append,
// and never rewrites lease.json. Time is the bubble's: no sleeping for
// real.
func TestAppendCountsAsHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := openTestStore(t)
		s := sessiontest.New("busy")
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Label: "agent"})
		require.NoError(t, err)
		defer w.Release(ctx)

		time.Sleep(5 * time.Second)
		ls, err := st.Lease(ctx, "busy")
		require.NoError(t, err)
		require.Equal(t, summary.LeaseHeld, ls.State)
		require.Equal(t, 5*time.Second, ls.HeartbeatAge, "idle since it acquired")

		stat := func(name string) os.FileInfo {
			fi, err := os.Stat(filepath.Join(st.Dir(), "busy", name))
			require.NoError(t, err)
			return fi
		}
		record, touched, touches := stat(fslease.RecordFile), stat(fslease.LockFile).ModTime(), 0
		for i := range 30 {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
			ls, err := st.Lease(ctx, "busy")
			require.NoError(t, err)
			require.Equal(t, summary.LeaseHeld, ls.State)
			require.Less(t, ls.HeartbeatAge, fslease.TouchInterval, "append %d", i)
			require.True(t, ls.Holder.HeartbeatAt.Equal(time.Now().Add(-ls.HeartbeatAge)), "append %d", i)
			if cur := stat(fslease.LockFile).ModTime(); !cur.Equal(touched) {
				touched, touches = cur, touches+1
			}
			require.True(t, os.SameFile(record, stat(fslease.RecordFile)), "append %d rewrote lease.json", i)
		}
		require.Equal(t, 3, touches, "30 appends over 2.9 seconds touch the lease three times")

		page, err := st.List(ctx, summary.Query{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Less(t, page.Items[0].Lease.HeartbeatAge, fslease.TouchInterval)
		require.Equal(t, "agent", page.Items[0].Lease.Holder.Label)
	})
}

// noTouch is a lease whose Touch does nothing: the writer of
// BenchmarkAppendTouch's baseline.
type noTouch struct{ leaseHandle }

func (noTouch) Touch(time.Time) error { return nil }

// steppingClock advances a second at every reading: every append of a
// store on it is a second after the previous one, so that every append
// touches the lease (the most Touch ever costs an append).
type steppingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// BenchmarkAppendTouch measures what letting appends count as heartbeats
// costs an append: appends with Touch (touch=on: lease.lock touched at
// most once a second, so almost none of them pay for it), appends that
// each touch it (touch=every: a clock that steps a second per reading, as
// for a holder appending once a second or less), and appends without it
// (touch=off), interleaved op by op on one file system so that noise hits
// all alike. It reports each one's time per append and its ratio to
// touch=off.
func BenchmarkAppendTouch(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			type arm struct {
				name string
				w    sessionstore.Writer
				took time.Duration
			}
			open := func(name string, opts Options) *Store {
				st, err := Open(filepath.Join(b.TempDir(), name), opts)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					if err := st.Close(); err != nil {
						b.Error(err)
					}
				})
				return st
			}
			plain := open("plain", Options{})
			stepped := open("stepped", Options{Now: (&steppingClock{t: time.Now()}).Now})
			arms := []*arm{{name: "off"}, {name: "on"}, {name: "every"}}
			for _, a := range arms {
				st := plain
				if a.name == "every" {
					st = stepped
				}
				w, err := st.Create(ctx, snapshotOfSize(b, a.name, size), sessionstore.AcquireOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = w.Release(ctx) })
				if a.name == "off" {
					w.(*writer).lease = noTouch{w.(*writer).lease}
				}
				a.w = w
			}
			snaps := map[string]sessnap.Snapshot{}
			for _, a := range arms {
				snaps[a.name] = snapshotOfSize(b, a.name, size)
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				// Rotate the order so that no arm always follows another.
				for j := range arms {
					a := arms[(i+j)%len(arms)]
					t0 := time.Now()
					if _, err := a.w.Append(ctx, a.w.Revision(), snaps[a.name]); err != nil {
						b.Fatal(err)
					}
					a.took += time.Since(t0)
				}
			}
			b.StopTimer()
			base := arms[0].took
			for _, a := range arms {
				b.ReportMetric(float64(a.took.Microseconds())/float64(b.N), "µs/append-touch="+a.name)
				if a != arms[0] {
					b.ReportMetric(a.took.Seconds()/base.Seconds(), "ratio-"+a.name+"/off")
				}
			}
		})
	}
}
