package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// ErrBadQuery reports a search query that says nothing to look for or
// is out of bounds.
var ErrBadQuery = errors.New("sessionstore: bad search query")

// Search limits: a result holds DefaultSearchLimit hits unless the query
// asks for more, and never more than MaxSearchLimit.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 1000
)

// SearchQuery is a full-text search over sessions (Store.Search): their
// titles and the messages of their latest revisions (prompts, replies,
// reasoning, tool calls and their results).
type SearchQuery struct {
	// Text is what to look for: words, all of which must occur in one
	// message (in any case and order); "a phrase" of words in order; and
	// prefixes (work* matches worker and workers; "go te*"). A word is a
	// run of letters, digits and marks: foo_bar.go is the phrase "foo bar
	// go".
	Text string
	// Labels and Project select sessions as summary.Query's fields of the
	// same names do (labels by equality, ANDed; the project exactly, or
	// with ProjectTree the directories below it too).
	Labels      map[string]string
	Project     string
	ProjectTree bool
	// NoTools leaves tool calls and tool results out of the search.
	NoTools bool
	// Limit is the most hits returned (0: DefaultSearchLimit; above
	// MaxSearchLimit: MaxSearchLimit).
	Limit int
}

// Normalize validates q and fills in defaults. Errors wrap ErrBadQuery.
func (q SearchQuery) Normalize() (SearchQuery, error) {
	if _, err := fulltext.Parse(q.Text); err != nil {
		return q, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	f, err := q.Filter().Normalize()
	if err != nil {
		return q, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	q.Labels, q.Project = f.Labels, f.Project
	switch {
	case q.Limit < 0:
		return q, fmt.Errorf("%w: negative limit %d", ErrBadQuery, q.Limit)
	case q.Limit == 0:
		q.Limit = DefaultSearchLimit
	}
	q.Limit = min(q.Limit, MaxSearchLimit)
	return q, nil
}

// Filter is the listing filter of q's labels and project: the sessions
// it selects are those q searches.
func (q SearchQuery) Filter() summary.Query {
	return summary.Query{Labels: q.Labels, Project: q.Project, ProjectTree: q.ProjectTree}
}

// SearchHit is one message, or one session's title, that matches a
// query.
type SearchHit struct {
	ID session.SessionID `json:"id"`
	// Title is the session's title.
	Title string `json:"title,omitempty"`
	// Field says where the words are: "title" (the session's title),
	// "text" (a message's text) or "tool" (a message's tool calls and
	// results).
	Field string `json:"field"`
	// Message is the index of the message in the conversation (from 0),
	// -1 for the title; Role is the message's role.
	Message int          `json:"message"`
	Role    session.Role `json:"role,omitempty"`
	// Revision is the revision the message appeared at (the title: the
	// revision it was set at, or a later one).
	Revision uint64 `json:"revision"`
	// UpdatedAt is when the session's latest revision was written.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Score ranks the hit (BM25, or the adapter's own relevance): higher
	// is better, comparable within one result only.
	Score float64 `json:"score"`
	// Snippet is some of the text around the first match, with white
	// space made single spaces; Marks are the matches in it (byte
	// offsets). The text is the session's: print it escaped.
	Snippet string     `json:"snippet"`
	Marks   []TextSpan `json:"marks,omitempty"`
}

// TextSpan is the bytes [Start, End) of a text.
type TextSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// SearchResult is the answer to a search (Store.Search).
type SearchResult struct {
	// Hits are the best hits, best first.
	Hits []SearchHit `json:"hits"`
	// Indexed is the number of sessions the store brought into its index
	// before answering (an index that was missing, or behind appends made
	// without it); 0 when the index was current.
	Indexed int `json:"indexed,omitempty"`
	// Unreadable lists the sessions that could not be searched (as a
	// listing reports them).
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// SearchIndexReport is what rebuilding a search index did.
type SearchIndexReport struct {
	// Sessions is the number of sessions indexed.
	Sessions int `json:"sessions"`
	// Unreadable lists the sessions that could not be read (and so are
	// not in the index).
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// SearchReindexer is a Store whose search index is kept apart from its
// records and can be rebuilt from them.
type SearchReindexer interface {
	Store
	// ReindexSearch rebuilds the index from the records. Searches during
	// the rebuild stay correct. Errors: ErrClosed, a done context's, I/O.
	ReindexSearch(ctx context.Context) (SearchIndexReport, error)
}

// Search is s.Search(ctx, q), for callers written when search was an
// optional capability of a store.
func Search(ctx context.Context, s Store, q SearchQuery) (SearchResult, error) {
	return s.Search(ctx, q)
}
