package record

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChainPolicy: a chain grows while its bytes stay within 1.5× the
// newest snapshot, and every delta it writes rebuilds its snapshot.
func TestChainPolicy(t *testing.T) {
	m := Meta{Version: Version1, Schema: 1, Gen: 1, Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Kind: KindFull}
	tests := []struct {
		name  string
		snaps [][]byte
		// bounds on the deltas among the len(snaps)-1 revisions after
		// the first
		minDeltas, maxDeltas int
	}{
		{name: "growing conversation: mostly deltas", snaps: growingSnapshots(60), minDeltas: 40, maxDeltas: 59},
		{name: "unchanged snapshot: chains restart within the budget", snaps: repeat([]byte(`{"id":"a","text":"`+strings.Repeat("x", 2000)+`"}`), 60), minDeltas: 40, maxDeltas: 57},
		{name: "unrelated snapshots: full records", snaps: [][]byte{[]byte(`{"a":"` + strings.Repeat("1", 300) + `"}`), []byte(`{"a":"` + strings.Repeat("2", 300) + `"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Chain
			c.Start(tt.snaps[0])
			full, held, deltas := len(tt.snaps[0]), 0, 0
			for i, s := range tt.snaps[1:] {
				m.Rev = uint64(i + 2)
				line := c.DeltaLine(m, s, 1<<20)
				if line == nil {
					c.Advance(KindFull, s, len(Encode(m, s)))
					full, held = len(s), 0
					continue
				}
				deltas++
				got, payload, err := Parse(line[:len(line)-1], 1<<20)
				require.NoError(t, err)
				require.Equal(t, KindDelta, got.Kind)
				require.Equal(t, Version2, got.Version)
				snap, err := Apply(c.Snapshot(), payload, len(s))
				require.NoError(t, err)
				require.Equal(t, string(s), string(snap))
				held += len(line)
				require.LessOrEqual(t, full+held, len(s)*3/2)
				c.Advance(KindDelta, s, len(line))
			}
			require.GreaterOrEqual(t, deltas, tt.minDeltas)
			require.LessOrEqual(t, deltas, tt.maxDeltas)
		})
	}
	var c Chain
	require.Nil(t, c.DeltaLine(m, []byte(`{"a":1}`), 1<<20), "a chain that knows no snapshot writes in full")
}

func repeat(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
