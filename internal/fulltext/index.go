package fulltext

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// Index is an inverted index in memory, for a store that keeps its
// sessions in memory (memstore): the title and the messages of each
// session's latest revision, each message with the revision it appeared
// at. It is not safe for concurrent use; the caller locks.
type Index struct {
	sessions map[session.SessionID]*indexed
	// words maps a word to the documents holding it and how often.
	words map[string]map[docKey]int
	docs  map[docKey]*doc
	total int // words in all documents
}

type docKey struct {
	id  session.SessionID
	msg int // -1: the title
}

type doc struct {
	fields [2]string // FieldText (or the title) and FieldTool
	role   session.Role
	rev    uint64
	words  int
}

// indexed is what the index holds of one session.
type indexed struct {
	rev      uint64
	msgs     []session.Message // the messages indexed (the caller's: shared)
	title    string
	project  string
	labels   map[string]string
	updated  time.Time
	titleRev uint64
	count    int // messages indexed, when msgs is not kept (PutDocs)
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{sessions: map[session.SessionID]*indexed{}, words: map[string]map[docKey]int{}, docs: map[docKey]*doc{}}
}

// Revision is what Put indexes of one revision of a session.
type Revision struct {
	ID       session.SessionID
	Revision uint64
	Updated  time.Time
	Title    string
	Project  string
	Labels   map[string]string
	// Messages is the conversation. Messages the index already holds (a
	// prefix that is the same memory, or equal) are not indexed again.
	Messages []session.Message
}

// Put indexes revision r of its session, which follows the revision
// indexed before (every revision must be put, in order): the messages
// after those the index holds appear at r.Revision, and so does a title
// that changed.
func (ix *Index) Put(r Revision) {
	s := ix.sessions[r.ID]
	if s == nil {
		s = &indexed{}
		ix.sessions[r.ID] = s
	}
	keep := min(len(s.msgs), len(r.Messages))
	if keep > 0 && &s.msgs[0] != &r.Messages[0] {
		// Not the same memory: keep what is the same, from the start.
		for i := range keep {
			a, _ := MessageDoc(&s.msgs[i])
			b, _ := MessageDoc(&r.Messages[i])
			if a != b {
				keep = i
				break
			}
		}
	}
	for i := keep; i < len(s.msgs); i++ {
		ix.drop(docKey{r.ID, i})
	}
	for i := keep; i < len(r.Messages); i++ {
		d, _ := MessageDoc(&r.Messages[i])
		ix.add(docKey{r.ID, i}, &doc{fields: [2]string{d.Text, d.Tool}, role: d.Role, rev: r.Revision})
	}
	if r.Title != s.title || s.titleRev == 0 {
		ix.drop(docKey{r.ID, -1})
		if r.Title != "" {
			ix.add(docKey{r.ID, -1}, &doc{fields: [2]string{r.Title, ""}, rev: r.Revision})
		}
		s.title, s.titleRev = r.Title, r.Revision
	}
	s.rev, s.msgs, s.project, s.labels, s.updated = r.Revision, r.Messages, r.Project, r.Labels, r.Updated
}

// PutDocs sets what the index holds of session r.ID to r's title and
// the docs of its messages, message i having appeared at revs[i] and the
// title at titleRev (r.Messages is not read).
func (ix *Index) PutDocs(r Revision, titleRev uint64, docs []Doc, revs []uint64) {
	ix.Remove(r.ID)
	s := &indexed{rev: r.Revision, title: r.Title, titleRev: titleRev, project: r.Project, labels: r.Labels, updated: r.Updated}
	ix.sessions[r.ID] = s
	for i := range docs {
		ix.add(docKey{r.ID, i}, &doc{fields: [2]string{docs[i].Text, docs[i].Tool}, role: docs[i].Role, rev: revs[i]})
	}
	s.count = len(docs)
	if r.Title != "" {
		ix.add(docKey{r.ID, -1}, &doc{fields: [2]string{r.Title, ""}, rev: titleRev})
	}
}

// Docs returns what the index holds of session id: its revision's
// title, the revision the title was set at, and each message's doc and
// the revision it appeared at.
func (ix *Index) Docs(id session.SessionID) (title string, titleRev uint64, docs []Doc, revs []uint64, ok bool) {
	s := ix.sessions[id]
	if s == nil {
		return "", 0, nil, nil, false
	}
	for i := range max(len(s.msgs), s.count) {
		d := ix.docs[docKey{id, i}]
		if d == nil {
			break
		}
		docs = append(docs, Doc{Role: d.role, Text: d.fields[0], Tool: d.fields[1]})
		revs = append(revs, d.rev)
	}
	return s.title, s.titleRev, docs, revs, true
}

// Remove forgets session id.
func (ix *Index) Remove(id session.SessionID) {
	s := ix.sessions[id]
	if s == nil {
		return
	}
	for i := range max(len(s.msgs), s.count) {
		ix.drop(docKey{id, i})
	}
	ix.drop(docKey{id, -1})
	delete(ix.sessions, id)
}

func (ix *Index) add(k docKey, d *doc) {
	for _, f := range d.fields {
		Tokens(f, func(t Token) bool {
			m := ix.words[t.Word]
			if m == nil {
				m = map[docKey]int{}
				ix.words[t.Word] = m
			}
			m[k]++
			d.words++
			return true
		})
	}
	ix.docs[k] = d
	ix.total += d.words
}

func (ix *Index) drop(k docKey) {
	d := ix.docs[k]
	if d == nil {
		return
	}
	for _, f := range d.fields {
		Tokens(f, func(t Token) bool {
			if m := ix.words[t.Word]; m != nil {
				delete(m, k)
				if len(m) == 0 {
					delete(ix.words, t.Word)
				}
			}
			return true
		})
	}
	delete(ix.docs, k)
	ix.total -= d.words
}

// Filter chooses the sessions and fields a search looks in.
type Filter struct {
	// NoTools leaves tool calls and results out.
	NoTools bool
	// Session, when set, says whether a session (its project and labels)
	// is searched.
	Session func(project string, labels map[string]string) bool
}

// Hit is one message (or title) that matches a query.
type Hit struct {
	ID       session.SessionID
	Title    string
	Message  int // -1: the title
	Role     session.Role
	Field    string
	Revision uint64
	Updated  time.Time
	Score    float64
	// Text is the matching field's text, and Spans where the terms are in
	// it.
	Text  string
	Spans []Span
}

// Search returns the hits of q, best first, at most limit (all for 0).
func (ix *Index) Search(q Query, f Filter, limit int) []Hit {
	if len(q.Terms) == 0 {
		return nil
	}
	// Candidates: the documents holding every term's words (a prefix's
	// any word it begins), checked word by word below.
	var cand map[docKey]bool
	for _, t := range q.Terms {
		docs := map[docKey]bool{}
		for j, w := range t.Words {
			var m map[docKey]bool
			if j == len(t.Words)-1 && t.Prefix {
				m = map[docKey]bool{}
				for word, ds := range ix.words {
					if strings.HasPrefix(word, w) {
						for k := range ds {
							m[k] = true
						}
					}
				}
			} else {
				m = map[docKey]bool{}
				for k := range ix.words[w] {
					m[k] = true
				}
			}
			if j == 0 {
				docs = m
				continue
			}
			for k := range docs {
				if !m[k] {
					delete(docs, k)
				}
			}
		}
		if cand == nil {
			cand = docs
			continue
		}
		for k := range cand {
			if !docs[k] {
				delete(cand, k)
			}
		}
	}
	sc := Scorer{Docs: len(ix.docs)}
	if len(ix.docs) > 0 {
		sc.AvgLen = float64(ix.total) / float64(len(ix.docs))
	}
	var hits []Hit
	for k := range cand {
		s, d := ix.sessions[k.id], ix.docs[k]
		if f.Session != nil && !f.Session(s.project, s.labels) {
			continue
		}
		fields := d.fields[:]
		if f.NoTools {
			fields = d.fields[:1]
		}
		spans := q.MatchFields(fields...)
		field := 0
		if spans[0] == nil && len(spans) > 1 {
			field = 1
		}
		if spans[field] == nil {
			continue
		}
		h := Hit{ID: k.id, Title: s.title, Message: k.msg, Role: d.role, Revision: d.rev, Updated: s.updated,
			Text: fields[field], Spans: spans[field], Field: FieldText}
		switch {
		case k.msg < 0:
			h.Field = FieldTitle
		case field == 1:
			h.Field = FieldTool
		}
		for _, t := range q.Terms {
			h.Score += sc.Term(ix.freq(t, k, fields), d.words, ix.df(t))
		}
		hits = append(hits, h)
	}
	SortHits(hits)
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// freq is how often term t occurs in the fields of document k.
func (ix *Index) freq(t Term, _ docKey, fields []string) int {
	n := 0
	for _, f := range fields {
		n += len(Query{Terms: []Term{t}}.Match(f))
	}
	return n
}

// df is the number of documents holding the first word of term t.
func (ix *Index) df(t Term) int {
	if !t.Prefix || len(t.Words) > 1 {
		return len(ix.words[t.Words[0]])
	}
	n := 0
	for w, ds := range ix.words {
		if strings.HasPrefix(w, t.Words[0]) {
			n += len(ds)
		}
	}
	return n
}

// SortHits orders hits best first: by score, then the most recently
// updated session, then the session, then the latest message.
func SortHits(h []Hit) {
	slices.SortFunc(h, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID), cmp.Compare(b.Message, a.Message))
	})
}
