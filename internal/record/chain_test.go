package record

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChainPolicy: a tracker writes deltas while the chain's bytes stay
// within 1.5× the newest snapshot (Policy), and every delta it writes
// rebuilds its snapshot; the first record, and one after an unrelated
// snapshot, are full.
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
		{name: "unchanged snapshot: chains restart within the budget", snaps: repeat([]byte(`{"id":"a","text":"`+strings.Repeat("x", 2000)+`"}`), 60), minDeltas: 40, maxDeltas: 59},
		{name: "unrelated snapshots: full records", snaps: [][]byte{[]byte(`{"a":"` + strings.Repeat("1", 300) + `"}`), []byte(`{"a":"` + strings.Repeat("2", 300) + `"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Tracker
			pieces, prevN := piecesOf(t, tt.snaps[0], -1)
			first, err := tr.Next(m, pieces, 1<<20, Versions{})
			require.NoError(t, err)
			require.Contains(t, string(first), `"kind":"full"`, "a tracker that knows no snapshot writes in full")
			full, held, deltas := len(tt.snaps[0]), 0, 0
			prev := tt.snaps[0]
			for i, s := range tt.snaps[1:] {
				m.Rev = uint64(i + 2)
				pieces, n := piecesOf(t, s, prevN) // as a writer that knows what grew
				line, err := tr.Next(m, pieces, 1<<20, Versions{})
				require.NoError(t, err)
				prevN = n
				got, payload, err := Parse(line[:len(line)-1], 1<<20)
				require.NoError(t, err)
				if got.Kind == KindFull {
					require.Equal(t, string(s), string(payload))
					full, held, prev = len(s), 0, s
					continue
				}
				deltas++
				require.Equal(t, Version2, got.Version)
				snap, err := Apply(prev, payload, len(s))
				require.NoError(t, err)
				require.Equal(t, string(s), string(snap))
				held += len(line)
				require.LessOrEqual(t, full+held, len(s)*ChainBudgetNum/ChainBudgetDen)
				prev = s
			}
			require.GreaterOrEqual(t, deltas, tt.minDeltas)
			require.LessOrEqual(t, deltas, tt.maxDeltas)
		})
	}
}

func repeat(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
