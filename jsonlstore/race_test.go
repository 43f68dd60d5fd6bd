//go:build race

package jsonlstore

// raceEnabled reports that the tests run under the race detector, which
// makes them several times slower: the model tests that loop seeds take
// fewer there (the races they can meet are the same in every seed) and
// run their full count without it (make seeds).
const raceEnabled = true
