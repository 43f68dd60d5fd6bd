// Package fulltext is the search semantics every adapter shares: what a
// word is (Tokens), what a query means (Parse, Query), which text a
// message offers to a search (MessageDoc), whether a text matches and
// where (Query.Match), the snippet shown for a hit (Snippet), the
// revision a message appeared at (Appearances), a digest that proves an
// index holds a conversation's first messages (Digest), and BM25 ranking
// (Scorer). Index engines (jsonlstore's SQLite FTS5 index, PostgreSQL's
// tsvector, the in-memory Index memstore keeps) find candidates; every
// candidate is checked with Query.Match on its text before it is a hit,
// so an engine whose own tokenizer differs at the edges can return more
// candidates than match, never a wrong hit.
//
// A word is a maximal run of letters, digits, marks and private-use
// characters, compared in lower case ("Foo_bar-2" is the words foo, bar
// and 2). A query is a list of terms, all of which must match in one
// message: a word, a phrase of words in order ("exit status", or a word
// that is several words, such as foo.go), and a prefix (work* matches
// workers; "make te*" the phrase with a prefix for its last word).
//
//	q, err := fulltext.Parse(`"exit status" worker*`)
//	spans := q.Match(text) // nil: no match
//	snip, marks := fulltext.Snippet(text, spans, fulltext.SnippetBytes)
package fulltext
