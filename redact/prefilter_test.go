package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrefilterAgainstSearch: over texts made of pieces of every rule's
// keywords, anchor bytes and ordinary text, the prefilter finds exactly
// the offsets where a search for each keyword finds it, over 500 seeds.
func TestPrefilterAgainstSearch(t *testing.T) {
	red, err := New(Options{Generic: true})
	require.NoError(t, err)
	r := red.set()
	var kws []string
	for _, ru := range r.rules {
		kws = append(kws, ru.keywords...)
	}
	pieces := []string{" ", "_", "-", ":", "/", ".", "a", "x", "n", "k", "p", "s", "\"", "1", "8", "A"}
	for _, kw := range kws {
		pieces = append(pieces, kw, kw[:len(kw)/2], kw[len(kw)/2:])
	}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var b strings.Builder
		for b.Len() < 2000 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		got := r.pre.scan(s)
		for ri, ru := range r.rules {
			var want []int
			for _, kw := range ru.keywords {
				for i := 0; ; {
					j := strings.Index(s[i:], kw)
					if j < 0 {
						break
					}
					want = append(want, i+j)
					i += j + 1
				}
			}
			slices.Sort(want)
			want = slices.Compact(want)
			var have []int
			if got != nil {
				have = slices.Clone(got[ri])
				slices.Sort(have)
				have = slices.Compact(have)
			}
			require.Equal(t, want, have, "seed %d, rule %s", seed, ru.id)
		}
	}
}
