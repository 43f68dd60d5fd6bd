package sessionstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

const (
	scanGitHub = "ghp_" + "Yq3Xv8Lm2Pw5Rt9Ny4Bk7Hd1Fs6Gj0Ca3UeQ"
	scanAWS    = "AKIA" + "YW3ER5TY7UI2OP4C"
)

// TestScan: secrets written with redaction off are reported once per
// place, at the first revision that holds them, with their rule and
// hash and never their text; a session written with redaction on has
// none to report.
func TestScan(t *testing.T) {
	ctx := t.Context()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	st := memstore.New(memstore.Options{})
	defer st.Close()

	s := sessiontest.New("leaky")
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Redactor: off})
	require.NoError(t, err)
	add := func(m session.Message) {
		t.Helper()
		require.NoError(t, s.AppendMessage(m))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	add(session.TextMessage(session.RoleUser, "use "+scanAWS, sessiontest.Epoch))
	add(session.TextMessage(session.RoleAssistant, "ok", sessiontest.Epoch))
	add(session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c",
		Content: []session.Part{{Type: session.PartText, Text: "token=" + scanGitHub}}}}})
	require.NoError(t, w.Release(ctx))

	clean := sessiontest.New("clean")
	require.NoError(t, clean.AppendMessage(session.TextMessage(session.RoleUser, "use "+scanAWS, sessiontest.Epoch)))
	w2, err := st.Create(ctx, sessiontest.Snap(t, clean), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx))

	var got []sessionstore.SecretFinding
	for f, err := range sessionstore.Scan(ctx, st, redact.Default()) {
		require.NoError(t, err)
		got = append(got, f)
	}
	require.Len(t, got, 2)
	base := len(sessiontest.Snap(t, sessiontest.New("x")).Messages)
	require.Equal(t, sessionstore.SecretFinding{ID: "leaky", Revision: 2, Message: base, Part: "0", Field: "text", Rule: "aws-access-key-id", Hash: hashOf(scanAWS)}, got[0])
	require.Equal(t, sessionstore.SecretFinding{ID: "leaky", Revision: 4, Message: base + 2, Part: "0.0", Field: "text", Rule: "github-token", Hash: hashOf(scanGitHub)}, got[1])

	for _, err := range sessionstore.Scan(ctx, st, redact.Default(), "nope") {
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
	}
}

func hashOf(secret string) string {
	p := redact.Placeholder("x", secret)
	return p[len("[REDACTED:x:") : len(p)-1]
}

// BenchmarkScan scans a store of growing agent sessions (W6's shape:
// 16 sessions of 4 MiB of tool output each, one revision per message;
// SESSIONSTORE_SCAN_BENCH_MIB sets the MiB per session) beside reading
// every file of the store once (op=read): scan÷read is the target's
// ratio of throughputs, at least 0.5. Two floors of the scan are
// measured beside it: op=inflate reads every file and decompresses the
// compressed ones (blobs are kept zstd-compressed: the scan must look
// at what they hold), op=find runs the default rules over what the
// files hold, already in memory, on every processor; inflate÷read and
// find÷read are their ratios.
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(b, err)
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Redactor: off})
	require.NoError(b, err)
	defer st.Close()
	r := rand.New(rand.NewPCG(30, 2))
	words := []string{"the", "file", "func", "return", "err", "nil", "user_id", "--verbose", "src/pkg/file.go:42", "https://example.com/docs", "self.session_token", "x := y[i]", "go test ./..."}
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()[:n]
	}
	perSession := 4 << 20
	if v, err := strconv.Atoi(os.Getenv("SESSIONSTORE_SCAN_BENCH_MIB")); err == nil && v > 0 {
		perSession = v << 20
	}
	for i := range 16 {
		s := sessiontest.New(fmt.Sprintf("s%02d", i))
		w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
		require.NoError(b, err)
		for total := 0; total < perSession; {
			m := session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c", Output: text(2<<10 + r.IntN(62<<10))}}}
			if total == 0 && i%4 == 0 {
				m.Parts[0].Output += " " + scanGitHub
			}
			total += len(m.Parts[0].Output)
			require.NoError(b, s.AppendMessage(m))
			snap, err := sessnap.Of(s)
			require.NoError(b, err)
			_, err = w.Append(ctx, w.Revision(), snap)
			require.NoError(b, err)
		}
		require.NoError(b, w.Release(ctx))
	}
	var size int64
	require.NoError(b, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			size += fi.Size()
		}
		return err
	}))
	var readNs, scanNs float64
	b.Run("op=read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			require.NoError(b, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					_, err = os.ReadFile(p)
				}
				return err
			}))
		}
		readNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(b, err)
	defer dec.Close()
	var contents [][]byte
	var inflateNs float64
	b.Run("op=inflate", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			contents = contents[:0]
			require.NoError(b, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				c, err := os.ReadFile(p)
				if err == nil && strings.HasSuffix(p, ".zst") {
					c, err = dec.DecodeAll(c, nil)
				}
				contents = append(contents, c)
				return err
			}))
		}
		inflateNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(readNs/inflateNs, "inflate÷read")
	})
	var total int64
	for _, c := range contents {
		total += int64(len(c))
	}
	b.Logf("store: %d bytes in its files, %d bytes once decompressed", size, total)
	b.Run("op=find", func(b *testing.B) {
		b.SetBytes(size)
		red := redact.Default()
		for b.Loop() {
			var wg sync.WaitGroup
			next := make(chan []byte)
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for c := range next {
						red.Find(string(c))
					}
				})
			}
			for _, c := range contents {
				next <- c
			}
			close(next)
			wg.Wait()
		}
		b.ReportMetric(readNs/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "find÷read")
	})
	b.Run("op=scan", func(b *testing.B) {
		b.SetBytes(size)
		red := redact.Default()
		for b.Loop() {
			n := 0
			for _, err := range sessionstore.Scan(ctx, st, red) {
				require.NoError(b, err)
				n++
			}
			require.Equal(b, 4, n)
		}
		scanNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(readNs/scanNs, "scan÷read")
	})
}
