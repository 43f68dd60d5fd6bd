package redact_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionstore/sessionstore/redact"
)

// agentText is n bytes of what an agent session holds: prose and code
// with identifiers, paths, flags and URLs (the prefilter's anchors as
// often as in transcripts).
func agentText(n int) string {
	r := rand.New(rand.NewPCG(6, 1))
	words := []string{"the", "file", "func", "return", "err", "nil", "if", "for", "range", "ctx", "context.Context",
		"user_id", "api_client", "--verbose", "-o", "src/pkg/file.go:42", "https://example.com/docs/api", "fmt.Errorf(\"open %s: %w\", p, err)",
		"self.session_token", "TODO:", "build-cache", "x := y[i]", "map[string]int{}", "SELECT id FROM users WHERE id = $1;",
		"0x7f3a", "README.md", "go test ./...", "npm install", "git commit -m \"fix\"", "Authorization", "Bearer", "token", "key"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// BenchmarkFind is the default rules' throughput over text without
// secrets: 10 MiB of look-alikes (mostly base64 images, whose upper-case
// letters are anchors of the prefilter) and 10 MiB of agent text.
func BenchmarkFind(b *testing.B) {
	for _, c := range []struct {
		name string
		text string
	}{{"text=lookalikes", lookalikes(10 << 20)}, {"text=agent", agentText(10 << 20)}} {
		b.Run(c.name, func(b *testing.B) {
			r := redact.Default()
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				if n := len(r.Find(c.text)); n > 1 {
					b.Fatal(n)
				}
			}
		})
	}
}
