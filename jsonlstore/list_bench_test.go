package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// benchSessions builds n sessions under root quickly: each gets a log of
// revs records written directly with encodeRecord (no fsync), the
// summary.json a holder would have left, and the lease files of a
// released lease copied from a session made through the store. Session i
// was updated at Epoch+i seconds.
func benchSessions(tb testing.TB, root string, n, revs int) {
	tb.Helper()
	ctx := context.Background()
	st, err := Open(root, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	snap := snapshotOfSize(tb, "template", 2<<10)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		tb.Fatal(err)
	}
	leaseFiles := map[string][]byte{}
	for _, name := range []string{fslease.LockFile, fslease.RecordFile} {
		b, err := os.ReadFile(filepath.Join(root, "template", name))
		if err != nil {
			tb.Fatal(err)
		}
		leaseFiles[name] = b
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "template")); err != nil {
		tb.Fatal(err)
	}

	for i := range n {
		id := session.SessionID(fmt.Sprintf("bench-%05d", i))
		snap.ID = id
		payload, err := adapter.EncodeSnapshot(id, snap, 0)
		if err != nil {
			tb.Fatal(err)
		}
		at := sessiontest.Epoch.Add(time.Duration(i) * time.Second)
		var log []byte
		var last record.Rec
		for r := 1; r <= revs; r++ {
			m := record.Meta{Version: record.Version4, Schema: 1, Rev: uint64(r), Gen: 1, Time: at, Kind: record.KindFull}
			line := record.Encode(m, payload)
			last = record.Rec{Meta: m, Offset: int64(len(log)), LineLen: int64(len(line))}
			log = append(log, line...)
		}
		dir := filepath.Join(root, string(id))
		if err := os.Mkdir(dir, layout.DirPerm); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, LogFile), log, layout.FilePerm); err != nil {
			tb.Fatal(err)
		}
		fi, err := os.Lstat(filepath.Join(dir, LogFile))
		if err != nil {
			tb.Fatal(err)
		}
		sf, err := logfile.EncodeSummary(logfile.SummaryFile{
			Log: vfs.IdentityOf(fi), LogSize: last.End(), LastOffset: last.Offset, Revision: last.Rev,
			Summary: logfile.ProjectRecord(&last, &snap, last.End()),
		})
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), sf, layout.FilePerm); err != nil {
			tb.Fatal(err)
		}
		for name, b := range leaseFiles {
			if err := os.WriteFile(filepath.Join(dir, name), b, layout.FilePerm); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkList lists the first page (50, newest first) of 10,000 sessions:
// in a fresh store (a new Store per operation, so nothing is cached but
// the kernel's page cache) and from the live index of a store whose
// watcher has converged. The first scans every session's summary; the
// second selects from the in-memory index and computes lease status for
// the page's items only. Neither depends on the length of the histories
// (revisions=… changes nothing but the log size). floor=… are baselines
// measured in the same run: plain system calls for what a scan must read,
// and the lease inspections of one page.
func BenchmarkList(b *testing.B) {
	const sessions = 10000
	for _, revs := range []int{1, 100} {
		b.Run(fmt.Sprintf("sessions=%d/revisions=%d", sessions, revs), func(b *testing.B) {
			root := b.TempDir()
			benchSessions(b, root, sessions, revs)
			want := session.SessionID(fmt.Sprintf("bench-%05d", sessions-1)) // the newest
			b.Run("index=off", func(b *testing.B) { benchListFresh(b, root, want) })
			b.Run("index=catalog", func(b *testing.B) { benchListCatalog(b, root, want) })
			b.Run("index=on", func(b *testing.B) { benchListIndexed(b, root, sessions, want) })
			b.Run("floor=scan", func(b *testing.B) { benchFloorScan(b, root) })
			b.Run("floor=leases", func(b *testing.B) { benchFloorLeases(b, root, sessions) })
		})
	}
}

// benchListFresh lists from a new Store per operation.
func benchListFresh(b *testing.B, root string, want session.SessionID) {
	ctx := context.Background()
	for b.Loop() {
		st, err := Open(root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		page, err := st.List(ctx, summary.Query{})
		if err != nil || len(page.Items) != summary.DefaultLimit || page.Items[0].ID != want {
			b.Fatal(err, len(page.Items))
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
}

// benchListCatalog lists from a new Store per operation, through the
// catalog: written by a first listing, with the store's clock ahead so
// that the root counts as settled at once (catalog.Settled).
func benchListCatalog(b *testing.B, root string, want session.SessionID) {
	ctx := context.Background()
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	for range 2 { // the first writes the catalog, the second the root file
		st, err := Open(root, Options{Now: ahead})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.List(ctx, summary.Query{}); err != nil {
			b.Fatal(err)
		}
		_ = st.Close()
	}
	defer os.RemoveAll(filepath.Join(root, CatalogDir)) // the next variant reads the sessions
	for b.Loop() {
		st, err := Open(root, Options{Now: ahead})
		if err != nil {
			b.Fatal(err)
		}
		page, err := st.List(ctx, summary.Query{})
		if err != nil || len(page.Items) != summary.DefaultLimit || page.Items[0].ID != want || st.lister.Counts.Catalog.Load() != 1 {
			b.Fatal(err, len(page.Items))
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
}

// benchListIndexed lists from the live index of a converged watcher.
func benchListIndexed(b *testing.B, root string, sessions int, want session.SessionID) {
	ctx := context.Background()
	st, err := Open(root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ch, err := st.Watch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for range sessions {
		<-ch
	}
	for b.Loop() {
		page, err := st.List(ctx, summary.Query{})
		if err != nil || len(page.Items) != summary.DefaultLimit || page.Items[0].ID != want {
			b.Fatal(err, len(page.Items))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
}

// benchFloorScan is the physical floor of a scan, for comparison in the
// same run: what any listing that reads every summary must do at least,
// with plain system calls (no os.Root, no checks, one goroutine): list the
// root, read each summary.json, stat each log.
func benchFloorScan(b *testing.B, root string) {
	for b.Loop() {
		entries, err := os.ReadDir(root)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if _, err := os.ReadFile(filepath.Join(root, e.Name(), SummaryFile)); err != nil {
				b.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(root, e.Name(), LogFile)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
}

// benchFloorLeases is the cost of the lease status of one page's items
// (fslease.Inspect, one goroutine), which every List pays.
func benchFloorLeases(b *testing.B, root string, sessions int) {
	ctx := context.Background()
	for b.Loop() {
		for i := sessions - summary.DefaultLimit; i < sessions; i++ {
			if _, err := fslease.Inspect(ctx, filepath.Join(root, fmt.Sprintf("bench-%05d", i))); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
}
