package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// snapshotOfSize returns a snapshot of session id whose encoding is about
// size bytes.
func snapshotOfSize(tb testing.TB, id string, size int) sessnap.Snapshot {
	s := sessiontest.New(id)
	base, err := sessnap.Encode(s)
	if err != nil {
		tb.Fatal(err)
	}
	if pad := size - len(base) - 80; pad > 0 {
		if err := s.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat("x", pad), sessiontest.Epoch)); err != nil {
			tb.Fatal(err)
		}
	}
	return sessiontest.Snap(tb, s)
}

// BenchmarkAppend measures a durable append (everything Append does,
// summary refresh included) against the physical baseline: an O_APPEND
// write of the same bytes plus fdatasync, on the same file system, the two
// interleaved op by op so that noise hits both alike. It reports the
// throughput ratio store/raw (1.0 = the disk's limit).
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{1 << 10, 16 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			dir := b.TempDir()
			st, err := Open(filepath.Join(dir, "store"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			snap := snapshotOfSize(b, "bench", size)
			w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Release(ctx)
			payload, err := adapter.EncodeSnapshot("bench", snap, 0)
			if err != nil {
				b.Fatal(err)
			}
			line := record.Encode(record.Meta{Version: record.Version4, Schema: 1, Rev: 1, Gen: 1, Time: time.Now().UTC(), Kind: record.KindFull}, payload)
			// The baseline goes through the same platform sync (fdatasync
			// on Linux, F_FULLFSYNC on macOS) but nothing else.
			rawRoot, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer rawRoot.Close()
			raw, err := vfs.OS(rawRoot).OpenFile("raw.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			b.SetBytes(int64(len(line)))
			var storeT, rawT time.Duration
			rev := w.Revision()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := raw.Write(line); err != nil {
					b.Fatal(err)
				}
				if err := raw.Datasync(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				rev, err = w.Append(ctx, rev, snap)
				if err != nil {
					b.Fatal(err)
				}
				storeT += time.Since(t1)
				rawT += t1.Sub(t0)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(n/storeT.Seconds(), "store-appends/s")
			b.ReportMetric(n/rawT.Seconds(), "raw-appends/s")
			b.ReportMetric(rawT.Seconds()/storeT.Seconds(), "ratio-store/raw")
			b.ReportMetric(float64(len(line)), "bytes-written/op")
		})
	}
}

// BenchmarkLoadLatest loads the latest revision of sessions whose logs hold
// 1, 1,000 and 10,000 revisions of the same final snapshot: the cost must
// not grow with the history (within 2x). With records=delta the
// log is what a writer with delta records writes (its chain policy,
// record.Tracker): chains of deltas after full records, so Load reads back to
// the last full record and applies the deltas after it.
func BenchmarkLoadLatest(b *testing.B) {
	ctx := context.Background()
	snap := snapshotOfSize(b, "placeholder", 16<<10)
	for _, c := range []struct {
		revs  int
		delta bool
	}{{1, false}, {1000, false}, {10000, false}, {1, true}, {1000, true}, {10000, true}} {
		revs := c.revs
		kind := map[bool]string{false: "full", true: "delta"}[c.delta]
		b.Run(fmt.Sprintf("records=%s/revisions=%d", kind, revs), func(b *testing.B) {
			root := b.TempDir()
			id := fmt.Sprintf("load-%d", revs)
			snap.ID = session.SessionID(id)
			payload, err := adapter.EncodeSnapshot(snap.ID, snap, 0)
			if err != nil {
				b.Fatal(err)
			}
			var log []byte
			var tr record.Tracker
			members, err := record.Members(payload)
			if err != nil {
				b.Fatal(err)
			}
			at := sessiontest.Epoch
			for r := 1; r <= revs; r++ {
				m := record.Meta{Version: record.VersionOf(record.KindFull), Schema: 1, Rev: uint64(r), Gen: 1, Time: at, Kind: record.KindFull}
				line := record.Encode(m, payload)
				if c.delta {
					if line, err = tr.Next(m, members, sessionstore.DefaultMaxRecordBytes, record.Versions{}); err != nil {
						b.Fatal(err)
					}
				}
				log = append(log, line...)
			}
			if err := os.Mkdir(filepath.Join(root, id), 0o700); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, id, LogFile), log, 0o600); err != nil {
				b.Fatal(err)
			}
			st, err := Open(root, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			b.ResetTimer()
			for range b.N {
				rec, err := st.Load(ctx, snap.ID)
				if err != nil || rec.Revision != uint64(revs) {
					b.Fatal(err, rec.Revision)
				}
			}
			b.ReportMetric(float64(len(log)), "log-bytes") // after ResetTimer, which clears metrics
		})
	}
}
