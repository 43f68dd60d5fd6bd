package fulltext

import "math"

// BM25's parameters, as SQLite's FTS5 uses them.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Scorer ranks documents by BM25 over a corpus of Docs documents of
// AvgLen words on average: the higher, the better.
type Scorer struct {
	Docs   int
	AvgLen float64
}

// Term scores one term found freq times in a document of n words, the
// term being in df documents of the corpus.
func (s Scorer) Term(freq, n, df int) float64 {
	if freq == 0 || s.Docs == 0 {
		return 0
	}
	idf := math.Log(1 + (float64(s.Docs)-float64(df)+0.5)/(float64(df)+0.5))
	norm := 1 - bm25B
	if s.AvgLen > 0 {
		norm += bm25B * float64(n) / s.AvgLen
	}
	f := float64(freq)
	return idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
}
