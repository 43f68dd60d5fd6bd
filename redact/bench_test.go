package redact_test

import (
	"testing"

	"github.com/sessionstore/sessionstore/redact"
)

// BenchmarkFind is the default rules' throughput over 10 MiB of
// look-alikes (no secret: the prefilter's pass, and the expressions run
// around the keywords it meets).
func BenchmarkFind(b *testing.B) {
	text := lookalikes(10 << 20)
	r := redact.Default()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if n := len(r.Find(text)); n > 1 {
			b.Fatal(n)
		}
	}
}
