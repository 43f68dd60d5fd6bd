package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// corpus makes the message texts of the search workloads: prose of words
// drawn from a vocabulary of 30,000 with Zipf frequencies (a few words
// everywhere, most rare, as in real conversations), with one word planted
// in exactly one message of the whole corpus — the rare word searched
// for.
type corpus struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

// rareWord is the word planted once.
const rareWord = "quetzalcoatlus"

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 11))
	v := make([]string, 30000)
	seen := map[string]bool{rareWord: true}
	for i := range v {
		for {
			w := make([]byte, 3+r.IntN(8))
			for j := range w {
				w[j] = 'a' + byte(r.IntN(26))
			}
			if !seen[string(w)] {
				seen[string(w)] = true
				v[i] = string(w)
				break
			}
		}
	}
	return &corpus{r: r, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(v)-1)), vocab: v}
}

// text returns about n bytes of prose, in sentences.
func (c *corpus) text(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		for i, k := 0, 4+c.r.IntN(12); i < k && b.Len() < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.vocab[c.zipf.Uint64()])
		}
		b.WriteString(". ")
	}
	return b.String()
}

// plant returns text with the rare word put in the middle of it.
func plant(text string) string {
	mid := strings.LastIndexByte(text[:len(text)/2], ' ')
	if mid < 0 {
		return rareWord + " " + text
	}
	return text[:mid+1] + rareWord + " " + text[mid+1:]
}

// corpusDoc names one message of the corpus.
func corpusDoc(session, msg int) string { return fmt.Sprintf("s%05d/%d", session, msg) }
