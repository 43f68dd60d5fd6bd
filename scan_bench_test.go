package sessionstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// BenchmarkScan scans a store of growing agent sessions (W6's shape:
// sessions of 4 MiB of tool output each, one revision per message, one
// session in four with a secret) beside reading every file of the store
// once (op=read): scan÷read is the target's ratio of throughputs, at
// least 0.5. The store is 16 sessions (about 13 MB in its files), or as
// many as make SESSIONSTORE_SCAN_BENCH_STORE_MIB MiB of files (1024: the
// target's 1 GiB store); SESSIONSTORE_SCAN_BENCH_MIB sets the MiB of tool
// output per session, and SESSIONSTORE_SCAN_BENCH_DIR a directory where
// the store is built once and kept for the next runs (a large store takes
// minutes to write).
//
// The floors of a scan are measured beside it, each with its ratio to
// the read: op=read-par reads every file on every processor; op=inflate
// reads every file and decompresses the compressed ones on one processor,
// op=inflate-par on every processor (blobs are kept zstd-compressed: a
// scan must look at what they hold); op=floor does that and runs the
// default rules over every file's content on every processor, what any
// scan does at least; op=find runs the rules over the content already
// in memory, on every processor (a store of at most 256 MiB of content:
// it is held whole).
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	sb := scanBenchStore(b)
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(b, err)
	st, err := jsonlstore.Open(sb.dir, jsonlstore.Options{Redactor: off})
	require.NoError(b, err)
	defer st.Close()
	files, size, err := listFiles(sb.dir)
	require.NoError(b, err)
	for _, p := range files { // the page cache warm, as for every run after the first
		_, err := os.ReadFile(p)
		require.NoError(b, err)
	}
	b.Logf("store: %d sessions, %d files, %d bytes in its files", sb.Sessions, len(files), size)

	var readNs float64
	ratio := func(b *testing.B, name string) {
		b.ReportMetric(readNs/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), name)
	}
	b.Run("op=read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			require.NoError(b, filepath.WalkDir(sb.dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					_, err = os.ReadFile(p)
				}
				return err
			}))
		}
		readNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("op=read-par", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			require.NoError(b, onEveryCore(files, func(_ *fileReader, p string) error {
				_, err := os.ReadFile(p)
				return err
			}))
		}
		ratio(b, "read-par÷read")
	})
	b.Run("op=inflate", func(b *testing.B) {
		b.SetBytes(size)
		fr := newFileReader()
		defer fr.close()
		for b.Loop() {
			for _, p := range files {
				_, err := fr.inflate(p)
				require.NoError(b, err)
			}
		}
		ratio(b, "inflate÷read")
	})
	b.Run("op=inflate-par", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			require.NoError(b, onEveryCore(files, func(fr *fileReader, p string) error {
				_, err := fr.inflate(p)
				return err
			}))
		}
		ratio(b, "inflate-par÷read")
	})
	red := redact.Default()
	b.Run("op=floor", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			require.NoError(b, onEveryCore(files, func(fr *fileReader, p string) error {
				c, err := fr.inflate(p)
				red.FindBytes(c)
				return err
			}))
		}
		ratio(b, "floor÷read")
	})
	b.Run("op=find", func(b *testing.B) {
		var contents [][]byte
		var content int64
		fr := newFileReader()
		defer fr.close()
		for _, p := range files {
			c, err := fr.inflate(p)
			require.NoError(b, err)
			if content += int64(len(c)); content > 256<<20 {
				b.Skipf("more than 256 MiB of content: more than op=find holds")
			}
			contents = append(contents, bytes.Clone(c))
		}
		b.Logf("store: %d bytes once decompressed", content)
		b.SetBytes(size)
		for b.Loop() {
			var wg sync.WaitGroup
			next := make(chan []byte)
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for c := range next {
						red.FindBytes(c)
					}
				})
			}
			for _, c := range contents {
				next <- c
			}
			close(next)
			wg.Wait()
		}
		ratio(b, "find÷read")
	})
	b.Run("op=scan", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			for _, err := range sessionstore.Scan(ctx, st, red) {
				require.NoError(b, err)
				n++
			}
			require.Equal(b, (sb.Sessions+3)/4, n)
		}
		ratio(b, "scan÷read")
	})
}

// scanBench is the store BenchmarkScan scans, and what built it.
type scanBench struct {
	dir        string
	PerSession int   `json:"per_session"`
	StoreBytes int64 `json:"store_bytes"` // 0: 16 sessions
	Sessions   int   `json:"sessions"`
}

// scanBenchStore builds BenchmarkScan's store (its doc), or finds it
// built in SESSIONSTORE_SCAN_BENCH_DIR: a file beside the directory
// records what it was built with.
func scanBenchStore(b *testing.B) scanBench {
	sb := scanBench{dir: os.Getenv("SESSIONSTORE_SCAN_BENCH_DIR"), PerSession: 4 << 20}
	if v, err := strconv.Atoi(os.Getenv("SESSIONSTORE_SCAN_BENCH_MIB")); err == nil && v > 0 {
		sb.PerSession = v << 20
	}
	if v, err := strconv.Atoi(os.Getenv("SESSIONSTORE_SCAN_BENCH_STORE_MIB")); err == nil && v > 0 {
		sb.StoreBytes = int64(v) << 20
	}
	if sb.dir == "" {
		sb.dir = b.TempDir()
	} else {
		var was scanBench
		if data, err := os.ReadFile(sb.dir + ".built"); err == nil && json.Unmarshal(data, &was) == nil &&
			was.PerSession == sb.PerSession && was.StoreBytes == sb.StoreBytes {
			was.dir = sb.dir
			return was
		}
		require.NoError(b, os.RemoveAll(sb.dir))
		require.NoError(b, os.RemoveAll(sb.dir+".built"))
		require.NoError(b, os.MkdirAll(sb.dir, 0o700))
	}
	sb.Sessions = buildScanStore(b, sb.dir, sb.PerSession, sb.StoreBytes)
	data, err := json.Marshal(sb)
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(sb.dir+".built", data, 0o600))
	return sb
}

// buildScanStore writes sessions of perSession bytes of tool output into
// a store at dir, on every processor, until its files hold storeBytes (16
// sessions when 0), and returns how many it wrote. Session i's content
// depends on i alone.
func buildScanStore(b *testing.B, dir string, perSession int, storeBytes int64) int {
	ctx := context.Background()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(b, err)
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Redactor: off})
	require.NoError(b, err)
	defer st.Close()
	words := []string{"the", "file", "func", "return", "err", "nil", "user_id", "--verbose", "src/pkg/file.go:42", "https://example.com/docs", "self.session_token", "x := y[i]", "go test ./..."}
	var next, written, stored atomic.Int64
	more := func() (int, bool) {
		if storeBytes > 0 && stored.Load() >= storeBytes {
			return 0, false
		}
		i := int(next.Add(1) - 1)
		return i, storeBytes > 0 || i < 16
	}
	write := func(i int) error {
		r := rand.New(rand.NewPCG(30, uint64(i)))
		text := func(n int) string {
			var sb strings.Builder
			for sb.Len() < n {
				sb.WriteString(words[r.IntN(len(words))])
				sb.WriteByte(' ')
			}
			return sb.String()[:n]
		}
		id := fmt.Sprintf("s%05d", i)
		s := sessiontest.New(id)
		snap, err := sessnap.Of(s)
		if err != nil {
			return err
		}
		w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
		if err != nil {
			return err
		}
		for total := 0; total < perSession; {
			m := session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c", Output: text(2<<10 + r.IntN(62<<10))}}}
			if total == 0 && i%4 == 0 {
				m.Parts[0].Output += " " + scanGitHub
			}
			total += len(m.Parts[0].Output)
			if err := s.AppendMessage(m); err != nil {
				return err
			}
			snap, err := sessnap.Of(s)
			if err != nil {
				return err
			}
			if _, err := w.Append(ctx, w.Revision(), snap); err != nil {
				return err
			}
		}
		if err := w.Release(ctx); err != nil {
			return err
		}
		_, n, err := listFiles(filepath.Join(dir, id))
		stored.Add(n)
		written.Add(1)
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for k := range errs {
		wg.Go(func() {
			for i, ok := more(); ok && errs[k] == nil; i, ok = more() {
				errs[k] = write(i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(b, err)
	}
	return int(written.Load())
}

// listFiles lists the files under dir and the bytes they hold.
func listFiles(dir string) ([]string, int64, error) {
	var files []string
	var size int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, p)
		size += fi.Size()
		return nil
	})
	return files, size, err
}

// fileReader reads files into buffers it reuses, and decompresses the
// compressed ones, as a scan's worker does at least.
type fileReader struct {
	dec     *zstd.Decoder
	in, out []byte
}

func newFileReader() *fileReader {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	return &fileReader{dec: dec}
}

func (fr *fileReader) close() { fr.dec.Close() }

// inflate returns what file p holds, decompressed when it is (.zst),
// valid until the next call.
func (fr *fileReader) inflate(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if int64(cap(fr.in)) < fi.Size() {
		fr.in = make([]byte, fi.Size())
	}
	fr.in = fr.in[:fi.Size()]
	if _, err := io.ReadFull(f, fr.in); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(p, ".zst") {
		return fr.in, nil
	}
	fr.out, err = fr.dec.DecodeAll(fr.in, fr.out[:0])
	return fr.out, err
}

// onEveryCore calls fn for each of files, on GOMAXPROCS goroutines, each
// with a fileReader of its own; the first error is returned.
func onEveryCore(files []string, fn func(fr *fileReader, p string) error) error {
	var next atomic.Int64
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Go(func() {
			fr := newFileReader()
			defer fr.close()
			for i := next.Add(1) - 1; i < int64(len(files)) && errs[k] == nil; i = next.Add(1) - 1 {
				errs[k] = fn(fr, files[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
