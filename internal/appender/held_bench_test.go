package appender

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/sessnap"
)

// BenchmarkHeldFirstLine compares, for an appender resumed from a chain
// of n messages and holding a copy of them (HoldCopy, as a resumed
// handle's writer), the first line after the resume: one message
// appended (the baseline) and a pop of one message, recognised by what
// the messages hold (no memory is shared): ratios in one run.
func BenchmarkHeldFirstLine(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ext := &memExt{m: map[string][]byte{}}
		s, _ := grownSnaps(b, n)
		full := sessiontest.Snap(b, s)
		a0, _, _ := resumed(b, ext, []sessnap.Snapshot{full})
		stored := a0.Snapshot()
		for _, op := range []string{"append", "pop"} {
			b.Run(fmt.Sprintf("%s/messages=%d", op, n), func(b *testing.B) {
				next := full
				next.Messages = Copy(full.Messages)
				if op == "append" {
					next.Messages = append(next.Messages, resumeMsg(n))
				} else {
					next.Messages = next.Messages[:n-1]
				}
				m := record.Meta{Schema: sessnap.SchemaVersion, Rev: 2, Gen: 2, Time: sessiontest.Epoch}
				for b.Loop() {
					b.StopTimer()
					a := New(ext, 1<<24, false)
					rec := &record.Rec{Meta: record.Meta{Kind: record.KindFull, Version: record.Version4}, Payload: stored}
					require.NoError(b, a.Resume(rec, nil))
					a.HoldCopy(full.Messages)
					snap := next
					b.StartTimer()
					line, err := a.Line("a", m, &snap)
					require.NoError(b, err)
					if op == "pop" && len(line) > 256 {
						b.Fatalf("a pop wrote %d bytes", len(line))
					}
				}
			})
		}
	}
}
