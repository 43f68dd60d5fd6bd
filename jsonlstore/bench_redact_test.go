package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// agentText returns n bytes of what an agent session holds: prose, code
// with identifiers, paths, flags and URLs, so that the redaction
// prefilter meets its anchor bytes (_, -, :, /) as often as in real
// transcripts.
func agentText(r *rand.Rand, n int) string {
	words := []string{"the", "file", "func", "return", "err", "nil", "if", "for", "range", "ctx", "context.Context",
		"user_id", "api_client", "--verbose", "-o", "src/pkg/file.go:42", "https://example.com/docs/api", "fmt.Errorf(\"open %s: %w\", p, err)",
		"self.session_token", "TODO:", "build-cache", "x := y[i]", "map[string]int{}", "SELECT id FROM users WHERE id = $1;",
		"0x7f3a", "README.md", "go test ./...", "npm install", "git commit -m \"fix\"", "Authorization", "Bearer", "token", "key"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// BenchmarkAppendRedact is the cost of redaction on the append path of a
// growing agent session (W6's shape: a prompt, a reply, a tool output of
// 2 to 64 KiB, one revision per message): two sessions in one store grow
// side by side, one written with the default rules and one with
// redaction off, their appends interleaved so that both meet the same
// machine. sync=real is a W6 append (fdatasync and all); sync=none makes
// the syncs no-ops, leaving the store's CPU work, where redaction weighs
// most. redact÷off is the ratio of their mean append times: the target
// is ≤ 1.10.
func BenchmarkAppendRedact(b *testing.B) {
	ctx := context.Background()
	for _, sync := range []string{"real", "none"} {
		b.Run("sync="+sync, func(b *testing.B) {
			dir := b.TempDir()
			root, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			fsys := vfs.OS(root)
			if sync == "none" {
				faulty := vfs.NewFaulty(fsys)
				faulty.Inject(vfs.Fault{Op: vfs.OpAnySync, Times: -1, Silent: true})
				fsys = faulty
			}
			st := newStore(dir, root, fsys, fsLeaser{}, Options{})
			defer st.Close()
			off, err := redact.New(redact.Options{Off: true})
			if err != nil {
				b.Fatal(err)
			}
			type grower struct {
				s    *session.Session
				w    sessionstore.Writer
				took time.Duration
			}
			var gs [2]*grower
			for i, red := range []*redact.Redactor{nil, off} {
				s := sessiontest.New(fmt.Sprintf("s%d", i))
				w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{Redactor: red})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Release(ctx)
				gs[i] = &grower{s: s, w: w}
			}
			r := rand.New(rand.NewPCG(6, 1))
			var bytes int64
			b.ResetTimer()
			for i := range b.N {
				var m session.Message
				switch i % 3 {
				case 0:
					m = session.TextMessage(session.RoleUser, agentText(r, 100+r.IntN(400)), sessiontest.Epoch)
				case 1:
					m = session.TextMessage(session.RoleAssistant, agentText(r, 200+r.IntN(600)), sessiontest.Epoch)
				default:
					m = session.Message{Role: session.RoleTool, CreatedAt: sessiontest.Epoch, Parts: []session.Part{
						{Type: session.PartToolResult, ToolCallID: "c", Output: agentText(r, 2<<10+r.IntN(62<<10))}}}
				}
				bytes += int64(len(m.Parts[0].Text) + len(m.Parts[0].Output))
				// Alternate which goes first, so that neither always meets
				// a cache the other warmed.
				for k := range 2 {
					g := gs[(i+k)%2]
					if err := g.s.AppendMessage(m); err != nil {
						b.Fatal(err)
					}
					snap, err := sessnap.Of(g.s)
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					if _, err := g.w.Append(ctx, g.w.Revision(), snap); err != nil {
						b.Fatal(err)
					}
					g.took += time.Since(start)
				}
			}
			b.StopTimer()
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(gs[0].took.Nanoseconds())/float64(b.N), "redact-ns/append")
			b.ReportMetric(float64(gs[1].took.Nanoseconds())/float64(b.N), "off-ns/append")
			b.ReportMetric(float64(gs[0].took)/float64(gs[1].took), "redact÷off")
		})
	}
}
