package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// growingConversation returns revisions 1..n of a session whose every
// revision adds one message of about msgBytes and changes the usage.
func growingConversation(tb testing.TB, id string, n, msgBytes int) []sessnap.Snapshot {
	tb.Helper()
	s := sessiontest.InState(id, session.StateRunning)
	var out []sessnap.Snapshot
	for r := 1; r <= n; r++ {
		if r > 1 {
			text := fmt.Sprintf("%s message %d: %s", id, r, strings.Repeat(string(rune('a'+r%26)), msgBytes))
			require.NoError(tb, s.AppendMessage(session.TextMessage(session.RoleAssistant, text, sessiontest.Epoch.Add(time.Duration(r)*time.Second))))
			require.NoError(tb, s.AddUsage(session.Usage{InputTokens: int64(r), OutputTokens: 7}))
		}
		out = append(out, sessiontest.Snap(tb, s))
	}
	return out
}

// TestDeltaGrowingConversation writes a growing conversation with deltas
// on and off: every revision reads back byte for byte, the log holds
// deltas (or none), every chain stays within the policy, and the log is a
// small multiple of the final snapshot (with deltas) instead of the sum
// of all snapshots.
func TestDeltaGrowingConversation(t *testing.T) {
	ctx := context.Background()
	const n = 60
	snaps := growingConversation(t, "grow", n, 1<<10)
	for _, fullOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("full-records-only=%v", fullOnly), func(t *testing.T) {
			st := openTestStoreWith(t, Options{FullRecordsOnly: fullOnly})
			w, err := st.Create(ctx, snaps[0], sessionstore.AcquireOptions{})
			require.NoError(t, err)
			want := []string{mustEncode(t, snaps[0])}
			for r := 1; r < n; r++ {
				if r == n/2 { // a new holder continues the chain it finds
					require.NoError(t, w.Release(ctx))
					w, err = st.Acquire(ctx, "grow", sessionstore.AcquireOptions{})
					require.NoError(t, err)
				}
				_, err := w.Append(ctx, uint64(r), snaps[r])
				require.NoError(t, err)
				want = append(want, mustEncode(t, snaps[r]))
			}
			require.NoError(t, w.Release(ctx))

			log, err := os.ReadFile(filepath.Join(st.Dir(), "grow", LogFile))
			require.NoError(t, err)
			kinds := kindsOf(log)
			final := len(want[n-1])
			t.Logf("kinds %v; log %d bytes = %.2f× the final snapshot (%d bytes)", kinds, len(log), float64(len(log))/float64(final), final)
			if fullOnly {
				require.Equal(t, map[string]int{record.KindFull: n}, kinds)
				require.NotContains(t, string(log), `{"v":2,`, "a log of full records is a format 1 log")
			} else {
				require.Positive(t, kinds[record.KindDelta])
				require.Less(t, len(log), 3*final, "deltas keep the log near the final snapshot's size")
				checkChains(t, log)
			}

			rec, err := st.Load(ctx, "grow")
			require.NoError(t, err)
			require.Equal(t, want[n-1], encodeRec(t, rec))
			var got []string
			for rec, err := range st.History(ctx, "grow") {
				require.NoError(t, err)
				got = append(got, encodeRec(t, rec))
			}
			require.Equal(t, want, got)
			for _, r := range []uint64{1, 2, n / 3, n / 2, n - 1} {
				rec, err := st.LoadRevision(ctx, "grow", r)
				require.NoError(t, err)
				require.Equal(t, want[r-1], encodeRec(t, rec), "revision %d", r)
			}
			var exp bytes.Buffer
			require.NoError(t, st.Export(ctx, "grow", &exp, false))
			require.Equal(t, n, bytes.Count(exp.Bytes(), []byte("\n")))
			rep, err := st.Verify(ctx, "grow")
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
		})
	}
}

// checkChains checks the writer's chain policy on every record of log: a
// chain's bytes (its full record's payload and its deltas' lines) stay
// within 1.5× the snapshot it rebuilds, a delta is smaller than it, and a
// chain goes past record.MaxChainDeltas deltas only while they weigh less
// than record.FullWeight times its full record.
func checkChains(t *testing.T, log []byte) {
	t.Helper()
	var recs []record.Rec
	for _, l := range bytes.SplitAfter(log, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		r, err := parseLine(l[:len(l)-1], sessionstore.DefaultMaxRecordBytes)
		require.NoError(t, err)
		r.LineLen = int64(len(l))
		recs = append(recs, r)
	}
	snaps, err := rebuildAll(recs)
	require.NoError(t, err)
	chain, full, deltas := 0, 0, 0
	for i, r := range recs {
		if r.Kind == record.KindFull {
			chain, full, deltas = len(r.Payload), len(r.Payload), 0
			continue
		}
		if deltas >= record.MaxChainDeltas {
			// Past MaxChainDeltas only while the deltas weigh less than
			// FullWeight times the full record.
			require.Less(t, chain-full, record.FullWeight*full, "revision %d: delta %d of a chain whose deltas outweigh its full record", r.Rev, deltas+1)
		}
		chain += int(r.LineLen)
		deltas++
		require.Less(t, len(r.Payload), len(snaps[i]), "revision %d: a delta is smaller than its snapshot", r.Rev)
		require.LessOrEqual(t, chain, len(snaps[i])*3/2, "revision %d: chain of %d bytes for a snapshot of %d", r.Rev, chain, len(snaps[i]))
		require.LessOrEqual(t, deltas, record.HardMaxChainDeltas)
	}
}

// TestDeltaChainBeyondCap: a hostile log whose delta chain holds more
// than the record cap, or whose delta claims a result above it, is
// corruption; no reader rebuilds it.
func TestDeltaChainBeyondCap(t *testing.T) {
	ctx := context.Background()
	const maxRecord = 8 << 10
	// As many revisions as fit under the cap.
	var payloads [][]byte
	for _, s := range growingConversation(t, "hostile", 100, 100) {
		p := []byte(mustEncode(t, s))
		if len(p) > maxRecord {
			break
		}
		payloads = append(payloads, p)
	}
	at := sessiontest.Epoch
	write := func(t *testing.T, lines [][]byte) *Store {
		root := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(root, "hostile"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root, "hostile", LogFile), bytes.Join(lines, nil), 0o600))
		st, err := Open(root, Options{MaxRecordBytes: maxRecord})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	line := func(rev int, kind string, payload []byte) []byte {
		return record.Encode(record.Meta{Version: record.VersionOf(kind), Schema: 1, Rev: uint64(rev), Gen: 1, Time: at, Kind: kind}, payload)
	}

	t.Run("chain longer than the cap", func(t *testing.T) {
		// Every revision a delta after revision 1: the deltas' lines
		// exceed 8 KiB although each snapshot fits.
		lines := [][]byte{line(1, record.KindFull, payloads[0])}
		for r := 2; r <= len(payloads); r++ {
			d, ok := record.Diff(payloads[r-2], payloads[r-1])
			require.True(t, ok)
			lines = append(lines, line(r, record.KindDelta, d))
		}
		require.Greater(t, len(bytes.Join(lines[1:], nil)), maxRecord)
		st := write(t, lines)
		_, err := st.Load(ctx, "hostile")
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Error(), "record cap")
		_, err = st.LoadRevision(ctx, "hostile", uint64(len(payloads)-1))
		require.ErrorAs(t, err, &ce)
		// A short enough chain still loads.
		rec, err := st.LoadRevision(ctx, "hostile", 5)
		require.NoError(t, err)
		require.Equal(t, string(payloads[4]), encodeRec(t, rec))
	})
	t.Run("result above the cap", func(t *testing.T) {
		big := fmt.Appendf(nil, `{"snap_len":%d,"snap_crc":"00000000","set":{"title":"x"}}`, 1<<30)
		st := write(t, [][]byte{line(1, record.KindFull, payloads[0]), line(2, record.KindDelta, big)})
		_, err := st.Load(ctx, "hostile")
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, record.ErrTooLong)
		var n int
		for _, err := range st.History(ctx, "hostile") {
			if err != nil {
				require.ErrorAs(t, err, &ce)
				require.Equal(t, int64(len(line(1, record.KindFull, payloads[0]))), ce.Offset)
				break
			}
			n++
		}
		require.Equal(t, 1, n)
	})
}

// BenchmarkGrowingConversation: 1,000 revisions, each adding one ~2 KiB
// message (and changing the usage), appended durably, with delta records
// and with full records only. It reports the bytes written to the log as a
// multiple of the final snapshot's size and the time per revision.
func BenchmarkGrowingConversation(b *testing.B) {
	ctx := context.Background()
	snaps := growingConversation(b, "grow", 1000, 2<<10)
	final, err := adapter.EncodeSnapshot("grow", snaps[len(snaps)-1], 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"delta", "full"} {
		b.Run("records="+mode, func(b *testing.B) {
			var logBytes int64
			var elapsed time.Duration
			for range b.N {
				st, err := Open(b.TempDir(), Options{FullRecordsOnly: mode == "full"})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				w, err := st.Create(ctx, snaps[0], sessionstore.AcquireOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for r := 1; r < len(snaps); r++ {
					if _, err := w.Append(ctx, uint64(r), snaps[r]); err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(start)
				fi, err := os.Stat(filepath.Join(st.Dir(), "grow", LogFile))
				if err != nil {
					b.Fatal(err)
				}
				logBytes = fi.Size()
				if err := w.Release(ctx); err != nil {
					b.Fatal(err)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(logBytes), "log-bytes")
			b.ReportMetric(float64(logBytes)/float64(len(final)), "log/final-snapshot")
			b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N*len(snaps)), "µs/revision")
		})
	}
}
