package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/importer/ingest"
	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

// The import benchmarks run on a corpus of the real transcripts (the full
// collection when it is beside the repository) and generated sessions of
// realistic size (importtest.WriteCorpus: INGEST_BENCH_SESSIONS of them,
// default 100, four in five Claude Code's), laid out as each tool lays
// out its files. Beside the import they measure, on the same files, what
// it cannot be faster than: reading and hashing them, and reading and
// converting them (the converters alone, nothing stored), on one core and
// on every core, and writing them as they are, synced.
//
//	INGEST_BENCH_SESSIONS=1000 go test -run - -bench . -benchtime 1x ./importer/ingest

type benchCorpus struct {
	dirs  map[string][]string // tool → paths to import
	files map[string][]string // tool → every file
	bytes int64
}

func loadBenchCorpus(b *testing.B) benchCorpus {
	n := 100
	if v := os.Getenv("INGEST_BENCH_SESSIONS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	dir := b.TempDir()
	_, err := importtest.WriteCorpus(dir, n*4/5, n-n*4/5)
	require.NoError(b, err)
	real, _ := importtest.Corpus(b, "../..")
	c := benchCorpus{dirs: map[string][]string{}, files: map[string][]string{}}
	for _, tool := range []string{ingest.ClaudeCode, ingest.Codex} {
		c.dirs[tool] = []string{filepath.Join(dir, tool), filepath.Join(real, tool)}
		for _, d := range c.dirs[tool] {
			require.NoError(b, filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() && strings.HasSuffix(p, ".jsonl") {
					fi, err := e.Info()
					if err != nil {
						return err
					}
					c.files[tool] = append(c.files[tool], p)
					c.bytes += fi.Size()
				}
				return err
			}))
		}
	}
	return c
}

// BenchmarkImport: op=read+hash, op=read+convert, op=read+convert-parallel
// and op=write+fsync are the baselines;
// op=import the first import into an empty file store, op=reimport a
// second import of the same sources into it (nothing changed), with the
// first's time over the second's as first/second.
func BenchmarkImport(b *testing.B) {
	c := loadBenchCorpus(b)
	ctx := context.Background()
	// The floor's files are removed at the end, after the import: on ext4
	// without a journal, a file created within a minute or so of freeing
	// inodes scans past them, so freeing two thousand just before the
	// import would slow it by what the floor did, not by what it does.
	floors := b.TempDir()
	b.Run("op=read+hash", func(b *testing.B) {
		b.SetBytes(c.bytes)
		buf := make([]byte, 1<<20)
		for b.Loop() {
			for _, files := range c.files {
				for _, p := range files {
					f, err := os.Open(p)
					require.NoError(b, err)
					h := sha256.New()
					_, err = io.CopyBuffer(h, f, buf)
					require.NoError(b, err)
					require.NoError(b, f.Close())
				}
			}
		}
	})
	b.Run("op=read+convert", func(b *testing.B) {
		b.SetBytes(c.bytes)
		for b.Loop() {
			for tool, files := range c.files {
				for _, p := range files {
					data, err := os.ReadFile(p)
					require.NoError(b, err)
					if tool == ingest.ClaudeCode {
						_, err = claudecode.Parse(bytes.NewReader(data), claudecode.Options{})
					} else {
						_, err = codex.Parse(bytes.NewReader(data), codex.Options{})
					}
					require.NoError(b, err)
				}
			}
		}
	})
	// The floors of an import on every core: converting with one
	// converter per core, and writing the same bytes as they are, a file
	// and a directory of each source's, each synced, four at once (as the
	// import writes sessions).
	b.Run("op=read+convert-parallel", func(b *testing.B) {
		b.SetBytes(c.bytes)
		for b.Loop() {
			each(b, c, runtime.GOMAXPROCS(0), func(tool, p string) {
				data, err := os.ReadFile(p)
				require.NoError(b, err)
				if tool == ingest.ClaudeCode {
					_, err = claudecode.Parse(bytes.NewReader(data), claudecode.Options{})
				} else {
					_, err = codex.Parse(bytes.NewReader(data), codex.Options{})
				}
				require.NoError(b, err)
			})
		}
	})
	b.Run("op=write+fsync", func(b *testing.B) {
		b.SetBytes(c.bytes)
		runs := 0
		for b.Loop() {
			runs++
			dir := filepath.Join(floors, strconv.Itoa(runs))
			require.NoError(b, os.Mkdir(dir, 0o700))
			var n atomic.Int64
			each(b, c, 4, func(_, p string) {
				data, err := os.ReadFile(p)
				require.NoError(b, err)
				d := filepath.Join(dir, strconv.FormatInt(n.Add(1), 10))
				require.NoError(b, os.Mkdir(d, 0o700))
				f, err := os.Create(filepath.Join(d, "log.jsonl"))
				require.NoError(b, err)
				_, err = f.Write(data)
				require.NoError(b, err)
				require.NoError(b, f.Sync())
				require.NoError(b, f.Close())
				df, err := os.Open(d)
				require.NoError(b, err)
				require.NoError(b, df.Sync())
				require.NoError(b, df.Close())
			})
		}
	})
	var first, second time.Duration
	var sessions int
	b.Run("op=import", func(b *testing.B) {
		b.SetBytes(c.bytes)
		for b.Loop() {
			st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
			require.NoError(b, err)
			start := time.Now()
			sessions = 0
			for tool, dirs := range c.dirs {
				rep, err := ingest.Run(ctx, st, tool, dirs, ingest.Options{})
				require.NoError(b, err)
				require.Zero(b, rep.Totals.Failed)
				sessions += rep.Totals.Sessions[ingest.ActionCreated]
			}
			first = time.Since(start)
			b.StopTimer()
			start = time.Now()
			for tool, dirs := range c.dirs {
				rep, err := ingest.Run(ctx, st, tool, dirs, ingest.Options{})
				require.NoError(b, err)
				require.Equal(b, rep.Totals.Sources, rep.Totals.Unchanged)
			}
			second = time.Since(start)
			require.NoError(b, st.Close())
			b.StartTimer()
		}
		b.ReportMetric(float64(sessions), "sessions")
	})
	b.Run("op=reimport", func(b *testing.B) {
		b.ReportMetric(float64(second.Microseconds())/1e3, "ms/op")
		b.ReportMetric(float64(first)/float64(second), "first/second")
		b.ReportMetric(float64(c.bytes)/second.Seconds()/1e6, "MB/s")
	})
}

// each calls fn with every file of c (and its tool), on n goroutines.
func each(b *testing.B, c benchCorpus, n int, fn func(tool, path string)) {
	type file struct{ tool, path string }
	files := make(chan file)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for f := range files {
				fn(f.tool, f.path)
			}
		})
	}
	for tool, paths := range c.files {
		for _, p := range paths {
			files <- file{tool, p}
		}
	}
	close(files)
	wg.Wait()
}

// BenchmarkShowMarkdown renders a generated Claude Code session of 3 MiB
// as Markdown the way `sessions show --format markdown` does: load the
// latest revision, restore it, write it.
func BenchmarkShowMarkdown(b *testing.B) {
	ctx := context.Background()
	st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
	require.NoError(b, err)
	defer st.Close()
	id, data := importtest.GenerateClaudeCode(42, 3<<20)
	p := filepath.Join(b.TempDir(), id+".jsonl")
	require.NoError(b, os.WriteFile(p, data, 0o600))
	rep, err := ingest.Run(ctx, st, ingest.ClaudeCode, []string{p}, ingest.Options{})
	require.NoError(b, err)
	sid := rep.Sessions()[0].ID
	b.ReportMetric(float64(len(data))/(1<<20), "source-MiB")
	for b.Loop() {
		rec, err := st.Load(ctx, sid)
		require.NoError(b, err)
		s, err := rec.Session()
		require.NoError(b, err)
		require.NoError(b, transcript.WriteMarkdown(io.Discard, s, transcript.Options{}))
	}
}

// BenchmarkImportPeakHeap imports one generated Claude Code transcript of
// INGEST_PEAK_MIB MiB (default 64) into an empty file store and reports
// the largest heap the import held, sampled every millisecond with the
// collector run at GOGC=10 so that the heap tracks what is live (at the
// default GOGC the process holds up to twice that): peak-heap-MiB, and
// peak/source, its ratio to the transcript's size.
//
//	INGEST_PEAK_MIB=93 go test -run - -bench ImportPeakHeap -benchtime 1x ./importer/ingest
func BenchmarkImportPeakHeap(b *testing.B) {
	mib := 64
	if v := os.Getenv("INGEST_PEAK_MIB"); v != "" {
		var err error
		mib, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	id, data := importtest.GenerateClaudeCode(7, mib<<20)
	p := filepath.Join(b.TempDir(), id+".jsonl")
	require.NoError(b, os.WriteFile(p, data, 0o600))
	size := float64(len(data))
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var peak float64
	for b.Loop() {
		st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
		require.NoError(b, err)
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		base := sample[0].Value.Uint64()
		stop, sampled := make(chan struct{}), make(chan uint64)
		go func() {
			var most uint64
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				metrics.Read(sample)
				most = max(most, sample[0].Value.Uint64())
				select {
				case <-stop:
					sampled <- most
					return
				case <-tick.C:
				}
			}
		}()
		_, err = ingest.Run(context.Background(), st, ingest.ClaudeCode, []string{p}, ingest.Options{})
		close(stop)
		most := <-sampled
		require.NoError(b, err)
		require.NoError(b, st.Close())
		peak = max(peak, float64(most-min(most, base)))
	}
	b.ReportMetric(size/(1<<20), "source-MiB")
	b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
	b.ReportMetric(peak/size, "peak/source")
}
