package searchdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

// Filter chooses the sessions and fields a search looks in.
type Filter struct {
	NoTools bool
	// Labels, Project and ProjectTree as sessionstore.SearchQuery has
	// them, normalized.
	Labels      map[string]string
	Project     string
	ProjectTree bool
	// Skip, when set, leaves out the sessions it reports true for.
	Skip func(session.SessionID) bool
	// Pending are what sessions hold beyond their rows, searched with
	// the index (see Pending); at most one a session.
	Pending []Pending
}

// Match is the FTS5 query of q: each term a quoted string (the words of
// a phrase in order; a prefix's last word marked with *), all ANDed;
// with noTools, in the title and text columns only.
func Match(q fulltext.Query, noTools bool) string {
	var b strings.Builder
	if noTools {
		b.WriteString("{title text} : (")
	}
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		// Words hold no quote (they are letters, digits and marks), so
		// quoting each term is exact.
		b.WriteString(`"` + strings.Join(t.Words, " ") + `"`)
		if t.Prefix {
			b.WriteString(" *")
		}
	}
	if noTools {
		b.WriteByte(')')
	}
	return b.String()
}

// weights of the columns title, text and tool in BM25.
const weights = "2.0, 1.0, 1.0"

// Search returns the hits of q, best first (FTS5's BM25), at most limit.
// Each candidate is checked with q.MatchFields on its text, so that the
// hits are exactly those the query's semantics give. The documents of
// f.Pending are searched with the index's, in the same read transaction,
// and ranked with them (see Pending).
func (d *DB) Search(ctx context.Context, q fulltext.Query, f Filter, limit int) ([]fulltext.Hit, error) {
	pending := make(map[session.SessionID]*Pending, len(f.Pending))
	for i := range f.Pending {
		pending[f.Pending[i].ID] = &f.Pending[i]
	}
	where := []string{"docs MATCH ?"}
	args := []any{Match(q, f.NoTools)}
	if f.Project != "" {
		if f.ProjectTree {
			where = append(where, `(s.project = ? OR s.project LIKE ? ESCAPE '\')`)
			prefix := strings.TrimSuffix(f.Project, "/") + "/"
			args = append(args, f.Project, likeEscape(prefix)+"%")
		} else {
			where = append(where, "s.project = ?")
			args = append(args, f.Project)
		}
	}
	for k, v := range f.Labels {
		where = append(where, "EXISTS (SELECT 1 FROM labels l WHERE l.sid = s.sid AND l.key = ? AND l.value = ?)")
		args = append(args, k, v)
	}
	//nolint:gosec // G201: the formatted pieces are this package's constants; every value is a parameter
	query := fmt.Sprintf(`SELECT s.id, s.title, s.updated, m.msg, m.role, m.rev, bm25(docs, %s) AS score, docs.title, docs.text, docs.tool
		FROM docs JOIN msgs m ON m.rowid = docs.rowid JOIN sessions s ON s.sid = m.sid
		WHERE %s ORDER BY score, s.updated DESC, s.id, m.msg DESC`, weights, strings.Join(where, " AND "))
	var hits []fulltext.Hit
	// The pending documents as BM25 sees them, made before the read
	// transaction (they need nothing of the index).
	var (
		pDocs []bm25Doc
		pCols [][3]string
		pOf   []*Pending
		pMsgs []*Message
	)
	if len(f.Pending) > 0 {
		var err error
		if pDocs, pCols, pOf, pMsgs, err = pendingDocs(ctx, q, &f); err != nil {
			return nil, err
		}
	}
	var from map[session.SessionID]int // the first message each pending session's row serves for (rowsNow)
	err := d.run(ctx, 0, "search", func(ctx context.Context) error {
		return d.read(ctx, func(tx *sql.Tx) error {
			hits = hits[:0]
			var sc *scorer
			var best topScores // the limit best scores so far, with a scorer
			if len(f.Pending) > 0 {
				// Every hit is scored here, over the corpus as it is once
				// the index holds the pending documents.
				c, err := d.readCorpus(ctx, tx, q, f.NoTools)
				if err != nil {
					return err
				}
				// Rows moved on since the sessions were read serve for
				// the messages they now hold: those pending documents are
				// left out, and the rows' documents are not replaced.
				if from, err = rowsNow(ctx, tx, &f); err != nil {
					return err
				}
				gone, err := replacedDocs(ctx, tx, q, &f, from)
				if err != nil {
					return err
				}
				var docs []bm25Doc
				var cols [][3]string
				var of []*Pending
				var msgs []*Message
				for i := range pDocs {
					if k := pMsgs[i].Index; k < 0 || k >= from[pOf[i].ID] {
						docs, cols, of, msgs = append(docs, pDocs[i]), append(cols, pCols[i]), append(of, pOf[i]), append(msgs, pMsgs[i])
					}
				}
				sc = newScorer(q, f.NoTools, c, gone, docs)
				hits = pendingHits(q, &f, sc, docs, cols, of, msgs)
				best.limit = limit
				for _, h := range hits {
					best.add(h.Score)
				}
			}
			rows, err := tx.QueryContext(ctx, query, args...)
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }() // read-only
			for rows.Next() {
				if sc == nil && limit > 0 && len(hits) >= limit {
					break
				}
				var h fulltext.Hit
				var updated int64
				var role string
				var cols [3]string
				if err := rows.Scan(&h.ID, &h.Title, &updated, &h.Message, &role, &h.Revision, &h.Score, &cols[0], &cols[1], &cols[2]); err != nil {
					return err
				}
				h.Score = -h.Score
				if sc != nil && best.full() && h.Score*sc.hi*(1+1e-9) < best.min() {
					break // rows come best first: none after this one ranks among the hits kept
				}
				if f.Skip != nil && f.Skip(h.ID) {
					continue
				}
				if p := pending[h.ID]; p != nil {
					if h.Message >= from[h.ID] || h.Message < 0 && p.TitleChanged {
						continue // the row's, no longer the session's: p.Docs holds it
					}
					h.Title = p.Title
					updated = p.Updated.UnixNano()
				}
				h.Role, h.Updated = session.Role(role), time.Unix(0, updated).UTC()
				fields, names := []string{cols[1], cols[2]}, []string{fulltext.FieldText, fulltext.FieldTool}
				if h.Message < 0 {
					fields, names = []string{cols[0]}, []string{fulltext.FieldTitle}
				} else if f.NoTools {
					fields = fields[:1]
				}
				spans := q.MatchFields(fields...)
				for i := range fields {
					if spans[i] != nil {
						h.Field, h.Text, h.Spans = names[i], fields[i], spans[i]
						break
					}
				}
				if h.Spans == nil {
					continue // FTS5's words differ from ours here: not a hit
				}
				if sc != nil {
					doc := newBM25Doc(q, cols)
					h.Score = sc.score(&doc)
					best.add(h.Score)
				}
				hits = append(hits, h)
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	if len(f.Pending) > 0 {
		fulltext.SortHits(hits)
		if limit > 0 && len(hits) > limit {
			hits = hits[:limit]
		}
	}
	return hits, nil
}

// topScores keeps the limit highest scores seen (all of them for a
// limit of 0 or less, when it is never full).
type topScores struct {
	limit int
	h     []float64 // a min-heap
}

func (t *topScores) full() bool { return t.limit > 0 && len(t.h) >= t.limit }

func (t *topScores) min() float64 { return t.h[0] }

func (t *topScores) add(s float64) {
	if t.limit <= 0 {
		return
	}
	if len(t.h) < t.limit {
		t.h = append(t.h, s)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.h[p] <= t.h[i] {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if s <= t.h[0] {
		return
	}
	t.h[0] = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.h[l] < t.h[m] {
			m = l
		}
		if r < len(t.h) && t.h[r] < t.h[m] {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// likeEscape escapes LIKE's wildcards with a backslash.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
