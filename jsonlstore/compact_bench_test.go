package jsonlstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// BenchmarkCompact compacts a large log (JSONLSTORE_COMPACT_BENCH_MB,
// default 256; the full run uses 1024) with KeepLast 1, standalone (lease,
// recovery, archive, verification, new log: everything Store.Compact
// does), in a fresh child process so that its peak resident memory is its
// own: it reports MB/s (b.SetBytes, and "compact-MB/s" as the child timed
// the call alone) and "peak-rss-MiB" (VmHWM of the child). The baseline,
// in the same run, is what the disk and zstd alone cost: a child that
// reads the same log sequentially and compresses it with the same encoder
// settings into io.Discard ("raw-MB/s"), and "ratio-compact/raw".
//
// The log is written directly with encodeRecord, as BenchmarkLoadLatest
// does. Its revisions look like an agent's: each is a whole conversation
// that grows by one message of random words per revision (so consecutive
// records share most of their bytes), restarting every compactBenchEpoch
// revisions; the texts cycle through compactBenchSets different sets, so
// no repetition falls inside zstd's window.
func BenchmarkCompact(b *testing.B) {
	mb := compactBenchMB
	if s := os.Getenv(compactBenchMBEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive number of MiB", compactBenchMBEnv, s)
		}
		mb = n
	}
	const id = session.SessionID("bench-compact")
	root := b.TempDir()
	dir := filepath.Join(root, string(id))
	if err := os.Mkdir(dir, layout.DirPerm); err != nil {
		b.Fatal(err)
	}
	payloads := compactBenchPayloads(b, id)
	logFile := filepath.Join(dir, LogFile)
	size, revs := compactBenchWriteLog(b, logFile, payloads, int64(mb)<<20)
	pristine := logFile + ".pristine" // a copy to restore before each round
	if err := os.Rename(logFile, pristine); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(revs), "revisions")

	var compactT, rawT time.Duration
	var peak, rawPeak int64
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		compactBenchReset(b, root, id, pristine, logFile)
		raw := compactBenchChild(b, procModeBenchRaw, root, id)
		rawT += compactBenchDuration(b, raw)
		rawPeak = max(rawPeak, compactBenchInt(b, raw, "hwm"))
		b.StartTimer()
		res := compactBenchChild(b, procModeBenchCompact, root, id)
		b.StopTimer()
		if res["trimmed"] != strconv.FormatUint(revs-1, 10) {
			b.Fatalf("compaction trimmed %s revisions, want %d", res["trimmed"], revs-1)
		}
		compactT += compactBenchDuration(b, res)
		peak = max(peak, compactBenchInt(b, res, "hwm"))
		b.StartTimer()
	}
	b.StopTimer()
	// The store is whole afterwards: the latest revision, and the first
	// one from the archive.
	st, err := Open(root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if rec, err := st.Load(ctx, id); err != nil || rec.Revision != revs {
		b.Fatalf("after compaction: Load: revision %d, %v", rec.Revision, err)
	}
	if rec, err := st.LoadRevision(ctx, id, 1); err != nil || rec.Revision != 1 {
		b.Fatalf("after compaction: LoadRevision(1): %v", err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)*n/compactT.Seconds()/1e6, "compact-MB/s")
	b.ReportMetric(float64(size)*n/rawT.Seconds()/1e6, "raw-MB/s")
	b.ReportMetric(rawT.Seconds()/compactT.Seconds(), "ratio-compact/raw")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(rawPeak)/(1<<20), "raw-peak-rss-MiB")
}

const (
	compactBenchMB    = 256
	compactBenchMBEnv = "JSONLSTORE_COMPACT_BENCH_MB"
	// compactBenchEpoch is how many revisions a conversation grows before
	// it restarts; compactBenchSets how many different conversations the
	// log cycles through; compactBenchMsg the size of one message.
	compactBenchEpoch = 32
	compactBenchSets  = 96
	compactBenchMsg   = 2 << 10
)

// compactBenchPayloads returns the payloads of compactBenchSets
// conversations, each compactBenchEpoch revisions long: payloads[s][i] is
// conversation s after i+1 messages.
func compactBenchPayloads(b *testing.B, id session.SessionID) [][][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 2000)
	for i := range words {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = 'a' + byte(r.IntN(26))
		}
		words[i] = string(w)
	}
	out := make([][][]byte, compactBenchSets)
	for s := range out {
		sess := sessiontest.New(string(id))
		for i := range compactBenchEpoch {
			var text strings.Builder
			for text.Len() < compactBenchMsg {
				text.WriteString(words[r.IntN(len(words))])
				text.WriteByte(' ')
			}
			role := session.RoleUser
			if i%2 == 1 {
				role = session.RoleAssistant
			}
			if err := sess.AppendMessage(session.TextMessage(role, text.String(), sessiontest.Epoch)); err != nil {
				b.Fatal(err)
			}
			p, err := adapter.EncodeSnapshot(id, sessiontest.Snap(b, sess), 0)
			if err != nil {
				b.Fatal(err)
			}
			out[s] = append(out[s], p)
		}
	}
	return out
}

// compactBenchWriteLog writes a log of at least size bytes and returns its
// size and number of revisions.
func compactBenchWriteLog(b *testing.B, name string, payloads [][][]byte, size int64) (int64, uint64) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var n int64
	var rev uint64
	at := sessiontest.Epoch
	for n < size {
		rev++
		i := int(rev-1) % compactBenchEpoch
		s := int(rev-1) / compactBenchEpoch % compactBenchSets
		line := record.Encode(record.Meta{Version: record.Version4, Schema: 1, Rev: rev, Gen: 1, Time: at.Add(time.Duration(rev) * time.Millisecond), Kind: record.KindFull}, payloads[s][i])
		if _, err := bw.Write(line); err != nil {
			b.Fatal(err)
		}
		n += int64(len(line))
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return n, rev
}

// compactBenchReset puts the pristine log back (a copy: the pristine one
// stays for the next round) and removes what a compaction left.
func compactBenchReset(b *testing.B, root string, id session.SessionID, pristine, logFile string) {
	dir := filepath.Join(root, string(id))
	for _, name := range []string{ArchiveDir, SummaryFile, LogFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
	}
	src, err := os.Open(pristine)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}

// compactBenchChild runs a benchmark child and returns the key=value
// fields of its "result" line.
func compactBenchChild(b *testing.B, mode, root string, id session.SessionID) map[string]string {
	c := startProc(b, mode, procEnv(root, id, 0)...)
	line := c.Next(b)
	c.Stop(b)
	return proctest.Fields(b, line, "result")
}

func compactBenchDuration(b *testing.B, res map[string]string) time.Duration {
	return time.Duration(compactBenchInt(b, res, "ns"))
}

func compactBenchInt(b *testing.B, res map[string]string, key string) int64 {
	n, err := strconv.ParseInt(res[key], 10, 64)
	if err != nil {
		b.Fatalf("child result %v: %s: %v", res, key, err)
	}
	return n
}

// compactBenchCompact is the child side of BenchmarkCompact: one
// standalone compaction with KeepLast 1, timed.
func compactBenchCompact(ctx context.Context, dir string, id session.SessionID) error {
	st, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	rep, err := st.Compact(ctx, id, maintenance.CompactPolicy{KeepLast: 1}, 0)
	d := time.Since(start)
	if err != nil {
		return err
	}
	if rep.Skipped != "" {
		return fmt.Errorf("compaction skipped: %s", rep.Skipped)
	}
	fmt.Printf("result ns=%d hwm=%d trimmed=%d archive=%d\n", d.Nanoseconds(), peakRSS(), rep.RevisionsTrimmed, rep.ArchiveBytes)
	return nil
}

// compactBenchRaw is the baseline: read the log sequentially and compress
// it as a segment is compressed, into io.Discard.
func compactBenchRaw(dir string, id session.SessionID) error {
	start := time.Now()
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(layout.LogPath(id))))
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := zstd.NewWriter(io.Discard, archive.EncoderOptions()...)
	if err != nil {
		return err
	}
	if _, err := io.Copy(zw, f); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	fmt.Printf("result ns=%d hwm=%d\n", time.Since(start).Nanoseconds(), peakRSS())
	return nil
}

// peakRSS returns this process's peak resident set size (VmHWM) in bytes,
// or -1 where /proc does not say.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return -1
}
