package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// TestHistoryDuringCompaction runs readers — goroutines with their own
// Store handles, and one reader process (helper_test.go's procModeReader)
// — while a holder appends and compacts the session again and again, by
// turns as the holder (maintenance.Compactor) and standalone (Store.Compact, which
// waits for the lease while the holder has it). Every revision is the
// deterministic procSession of its number, so readers check each record
// they are handed byte for byte.
//
// Each History pass must yield 1..N in order, with no gap, no repeat and
// no error, every record the one written as its revision, N at least the
// revision acknowledged when the pass began; Load, LoadRevision and List
// must agree likewise. A compaction replaces the log under the readers'
// feet and moves revisions into archives they have not opened yet: a
// reader that opened the old log reads it (the manifest ignores segments
// reaching into it), one that opens the new log finds the archive that
// was published before it. No reader may ever see corruption. The test
// counts the History passes during which a compaction ran and requires
// some.
func TestHistoryDuringCompaction(t *testing.T) {
	seed := procSeed(t)
	ctx := t.Context()
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })
	const id = session.SessionID("hc")

	snap, err := procSnapshot(id, seed, 1)
	require.NoError(t, err)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "holder"})
	require.NoError(t, err)
	var acked atomic.Uint64 // the last revision an Append acknowledged
	acked.Store(1)
	appendN := func(w sessionstore.Writer, n int) {
		for range n {
			require.NoError(t, procAppendQuiet(ctx, w, seed))
			acked.Store(w.Revision())
		}
	}
	appendN(w, hcStart-1)

	// compactions counts compactions begun and ended: a History pass that
	// sees it change ran while the log was being replaced.
	var begun, ended atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	type readerStats struct {
		reads, histories, overlapped int
		err                          error
	}
	stats := make([]readerStats, hcReaders)
	for i := range hcReaders {
		wg.Go(func() {
			rs := &stats[i]
			// Each reader has a Store of its own, as another process would.
			rst, err := Open(dir, Options{})
			if err != nil {
				rs.err = err
				return
			}
			defer rst.Close()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if n%2 == 1 {
					// A History pass, timed against the compactions.
					from, min := ended.Load(), acked.Load()
					res, err := procCheckHistory(ctx, rst, id, seed, 0)
					if err != nil {
						rs.err = fmt.Errorf("history pass %d: %w", rs.histories, err)
						return
					}
					if res.Latest < min {
						rs.err = fmt.Errorf("history pass %d ended at revision %d, %d was acknowledged before it began", rs.histories, res.Latest, min)
						return
					}
					rs.histories++
					if begun.Load() > from {
						rs.overlapped++
					}
					continue
				}
				if err := procReadOnce(ctx, rst, id, seed, r, n/2*2); err != nil {
					rs.err = fmt.Errorf("read %d: %w", rs.reads, err)
					return
				}
				rs.reads++
			}
		})
	}
	child := startProc(t, procModeReader, procEnv(dir, id, seed)...)
	require.Equal(t, "reading", child.Next(t))

	start := time.Now()
	r := rand.New(rand.NewPCG(seed, 0x6863))
	cycles, trimmed := 0, 0
	for ; cycles < hcCycles; cycles++ {
		appendN(w, hcAppends)
		keep := 1 + r.IntN(4)
		begun.Add(1)
		if cycles%2 == 0 {
			rep, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: keep})
			require.NoError(t, err)
			trimmed += hcCheckReport(t, st, rep)
		} else {
			// Standalone: it waits for the lease, which the holder lets go
			// of and then takes back.
			done := make(chan maintenance.CompactReport, 1)
			go func() {
				rep, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: keep}, time.Minute)
				if err != nil {
					rep.Skipped = "error: " + err.Error()
				}
				done <- rep
			}()
			require.NoError(t, w.Release(ctx))
			rep := <-done
			trimmed += hcCheckReport(t, st, rep)
			w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "holder"})
			require.NoError(t, err)
		}
		ended.Add(1)
	}
	close(stop)
	wg.Wait()
	child.Stop(t)
	require.NoError(t, w.Release(ctx))

	total := 0
	for i, rs := range stats {
		require.NoError(t, rs.err, "reader %d", i)
		total += rs.overlapped
		t.Logf("reader %d: %d reads, %d History passes (%d during a compaction)", i, rs.reads, rs.histories, rs.overlapped)
	}
	t.Logf("reader process: %s", hcChildReads(t, child))
	t.Logf("%d cycles of %d appends and a compaction, %d revisions, %v", cycles, hcAppends, acked.Load(), time.Since(start).Round(time.Millisecond))
	require.Positive(t, total, "no History pass ran during a compaction")
	require.Positive(t, trimmed, "no compaction trimmed anything")
	_, err = procCheckHistory(ctx, st, id, seed, 0)
	require.NoError(t, err)
}

const (
	hcReaders = 2
	hcStart   = 20 // revisions before the first compaction
	hcCycles  = 8
	hcAppends = 4
)

// hcCheckReport checks one compaction's report and returns 1 when it
// trimmed revisions. Compaction cuts the log only before a full record, so
// it may trim nothing: exactly when the chain of the first revision the
// policy keeps starts at the log's first record. Then the report says
// "nothing to trim" and FirstKept is that record.
func hcCheckReport(t *testing.T, st *Store, rep maintenance.CompactReport) int {
	t.Helper()
	if rep.Skipped == "" {
		require.Positive(t, rep.RevisionsTrimmed, "a compaction that did not skip trimmed nothing")
		return 1
	}
	require.Equal(t, "nothing to trim", rep.Skipped, "compaction of revision %d skipped", rep.Latest)
	var first uint64
	for info, err := range st.Records(t.Context(), rep.ID) {
		require.NoError(t, err)
		if !info.Archived {
			first = info.Revision
			break
		}
	}
	require.Equal(t, first, rep.FirstKept, "nothing trimmed, but the cut (revision %d) is not the log's first record (%d)", rep.FirstKept, first)
	return 0
}

// hcChildReads returns the reader process's last line ("reads N").
func hcChildReads(t *testing.T, c *proctest.Child) string {
	t.Helper()
	l, ok := c.TryNext()
	if !ok {
		return "no report"
	}
	require.True(t, strings.HasPrefix(l, "reads "), "reader process: %q", l)
	return l
}

// procAppendQuiet appends the generator's next revision, as
// procAppendNext does, without printing.
func procAppendQuiet(ctx context.Context, w sessionstore.Writer, seed uint64) error {
	rev := w.Revision()
	snap, err := procSnapshot(w.ID(), seed, rev+1)
	if err != nil {
		return err
	}
	if _, err := w.Append(ctx, rev, snap); err != nil {
		return fmt.Errorf("append revision %d: %w", rev+1, err)
	}
	return nil
}
