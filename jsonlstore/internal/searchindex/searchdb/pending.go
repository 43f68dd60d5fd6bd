package searchdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// A search need not wait for the index to be brought up to date: what a
// session holds beyond its row (the messages appended since, a new
// title) can be searched beside the index, as a Pending, and ranked as
// if the index held it. The index's hits of the session are then the
// ones its row holds for certain (the messages before From, the title
// unless it changed), carrying the session's title and time as they are
// now; the Pending's documents are scored by FTS5's BM25 (fts5_aux.c,
// fts5Bm25Function) over the index's corpus with the pending documents
// added to it: the rows and words the index holds (its averages record)
// and, for each term, the rows that hold it. A search so answers with
// the score the index gives once it holds them.

// Pending is what session ID holds beyond its row in the index, to be
// searched with it (Filter.Pending).
type Pending struct {
	ID session.SessionID
	// Title, Updated, Project and Labels are the session's as they are
	// now: its hits, from the index or from Docs, carry Title and
	// Updated, and Docs are filtered by Project and Labels.
	Title   string
	Updated time.Time
	Project string
	Labels  map[string]string
	// From is the first message the row may not hold as the session now
	// has it: the index's hits of messages From on are left out (Docs
	// holds them).
	From int
	// TitleChanged leaves the index's title document out; Docs holds
	// the new one (Index -1, its text the title) unless it is empty.
	TitleChanged bool
	Docs         []Message
	// FromRev and FromDigest are the row's revision and digest when the
	// session was read (its first From messages), and Rev the revision
	// read. A row that another process has moved on meanwhile, to a
	// revision of at most Rev holding the first messages of Docs (its
	// digest continues FromDigest over them), serves for those: they are
	// left out of the pending documents (rebase). Zero: never.
	FromRev    uint64
	FromDigest fulltext.Digest
	Rev        uint64
}

// rebase returns the first message p's session's row serves for, its
// row now holding revision rev, messages msgs of digest dig: p.From, or,
// for a row moved on since p was read as rebase's doc says, msgs.
func (p *Pending) rebase(rev uint64, msgs int, dig fulltext.Digest) int {
	if p.Rev == 0 || msgs <= p.From || rev > p.Rev || rev < p.FromRev {
		return p.From
	}
	d, n := p.FromDigest, p.From
	for i := range p.Docs {
		m := &p.Docs[i]
		switch {
		case m.Index < 0:
			continue // the title
		case m.Index != n:
			return p.From // not the messages after From, in order
		case n < msgs && m.Rev > rev, n >= msgs && m.Rev <= rev:
			return p.From // the row's messages did not all appear by its revision, or one after did
		case n < msgs:
			d = d.Add(&m.Doc)
		}
		n++
	}
	if n < msgs || d != dig {
		return p.From
	}
	return msgs
}

// rowsNow reads, in tx, the rows of the pending sessions as they are
// now and returns the first message each row serves for (rebase), by
// the session's ID. The rows are read by one statement for all the
// sessions, as StatesOf reads them.
func rowsNow(ctx context.Context, tx *sql.Tx, f *Filter) (map[session.SessionID]int, error) {
	from := make(map[session.SessionID]int, len(f.Pending))
	of := make(map[session.SessionID]*Pending, len(f.Pending))
	var ids []session.SessionID
	for i := range f.Pending {
		p := &f.Pending[i]
		from[p.ID] = p.From
		if p.Rev != 0 {
			of[p.ID] = p
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return from, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("searchdb: %w", err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, rev, messages, digest FROM sessions WHERE id IN (SELECT value FROM json_each(?))", string(b))
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only
	for rows.Next() {
		var id session.SessionID
		var rev int64
		var msgs int
		var dig []byte
		if err := rows.Scan(&id, &rev, &msgs, &dig); err != nil {
			return nil, err
		}
		var d fulltext.Digest
		p := of[id]
		if p == nil || rev < 0 || len(dig) != len(d) {
			continue
		}
		copy(d[:], dig)
		from[id] = p.rebase(uint64(rev), msgs, d)
	}
	return from, rows.Err()
}

// BM25's parameters, FTS5's, and the weights of the columns title,
// text and tool (the same as the constant weights).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

var columnWeights = [3]float64{2.0, 1.0, 1.0}

// corpus is what BM25 needs of the index: its rows and the words in all
// their columns, and how many rows hold each term of the query.
type corpus struct {
	rows, words int64
	hits        []int64
}

// readCorpus reads the corpus statistics for q in tx: the FTS5 table's
// averages record (docs_data, id 1: varints of the row count and each
// column's word count) and a count of the rows that match each term, as
// FTS5's xQueryPhrase counts them (with the column filter).
func (d *DB) readCorpus(ctx context.Context, tx *sql.Tx, q fulltext.Query, noTools bool) (corpus, error) {
	var c corpus
	var block []byte
	err := tx.QueryRowContext(ctx, "SELECT block FROM docs_data WHERE id = 1").Scan(&block)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// An index that never held a row.
	case err != nil:
		return c, err
	default:
		vals, ok := varints(block, 1+len(columnWeights))
		if !ok {
			return c, fmt.Errorf("%w: %s: the full-text table's averages record is malformed", ErrDamaged, d.path)
		}
		c.rows = int64(vals[0]) //nolint:gosec // G115: counts SQLite keeps as 64-bit integers
		for _, v := range vals[1:] {
			c.words += int64(v) //nolint:gosec // G115: as above
		}
		if c.rows < 0 || c.words < 0 || vals[0] > 1<<53 || c.words > 1<<53 {
			return c, fmt.Errorf("%w: %s: the full-text table's averages record claims %d rows of %d words", ErrDamaged, d.path, vals[0], c.words)
		}
	}
	c.hits = make([]int64, len(q.Terms))
	for i, t := range q.Terms {
		m := Match(fulltext.Query{Terms: []fulltext.Term{t}}, noTools)
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM docs WHERE docs MATCH ?", m).Scan(&c.hits[i]); err != nil {
			return c, err
		}
	}
	return c, nil
}

// varints decodes n SQLite varints (1 to 9 bytes, big-endian groups of
// 7 bits, the ninth byte whole) from the start of b.
func varints(b []byte, n int) ([]uint64, bool) {
	out := make([]uint64, 0, n)
	for range n {
		var v uint64
		i := 0
		for ; ; i++ {
			if i >= len(b) {
				return nil, false
			}
			if i == 8 {
				v = v<<8 | uint64(b[i])
				break
			}
			v = v<<7 | uint64(b[i]&0x7f)
			if b[i]&0x80 == 0 {
				break
			}
		}
		out = append(out, v)
		b = b[i+1:]
	}
	return out, true
}

// bm25Doc is a document as BM25 sees it: each term's instances in each
// column, and its words in all columns.
type bm25Doc struct {
	counts [3][]int // title, text, tool
	words  int
}

func newBM25Doc(q fulltext.Query, cols [3]string) bm25Doc {
	var d bm25Doc
	for k, text := range cols {
		var n int
		d.counts[k], n = q.Instances(text)
		d.words += n
	}
	return d
}

// holds reports whether the document holds term t in the columns
// searched (the first n).
func (d *bm25Doc) holds(t, n int) bool {
	for k := range n {
		if d.counts[k][t] > 0 {
			return true
		}
	}
	return false
}

// holdsAll reports whether the document holds every term in the columns
// searched (the first n): only then may it be a hit.
func (d *bm25Doc) holdsAll(n int) bool {
	for t := range d.counts[0] {
		if !d.holds(t, n) {
			return false
		}
	}
	return true
}

// scorer scores documents by BM25 over the index's corpus as it is once
// it holds the pending documents (and no longer the row documents they
// replace), as FTS5 would.
type scorer struct {
	q    fulltext.Query
	cols int // the columns searched: 3, or 2 without tools
	idf  []float64
	avg  float64
	// hi bounds how much higher a document's score is than FTS5's score
	// of it over the corpus as it is: the index's rows are read best
	// first by FTS5's score, and reading stops where no later row can
	// rank among the hits kept.
	hi float64
}

// newScorer is the scorer of q over the corpus c (the index's), less the
// documents gone, plus the documents added.
func newScorer(q fulltext.Query, noTools bool, c corpus, gone, added []bm25Doc) *scorer {
	sc := &scorer{q: q, cols: 3, hi: 1}
	if noTools {
		sc.cols = 2
	}
	rows, words := c.rows, c.words
	hits := append([]int64(nil), c.hits...)
	for sign, docs := range [][]bm25Doc{gone, added} {
		d := int64(2*sign - 1)
		for i := range docs {
			rows += d
			words += d * int64(docs[i].words)
			for t := range q.Terms {
				if docs[i].holds(t, sc.cols) {
					hits[t] += d
				}
			}
		}
	}
	idf := func(rows, hits int64) float64 {
		v := math.Log((float64(rows-hits) + 0.5) / (float64(hits) + 0.5))
		if !(v > 0) { // FTS5's floor; NaN too, from counts a damaged file gives
			v = 1e-6
		}
		return v
	}
	if rows > 0 {
		sc.avg = float64(words) / float64(rows)
	}
	sc.idf = make([]float64, len(q.Terms))
	r := 0.0
	for t := range sc.idf {
		sc.idf[t] = idf(rows, hits[t])
		r = max(r, sc.idf[t]/idf(c.rows, c.hits[t]))
	}
	sc.hi = r
	if c.rows > 0 && c.words > 0 {
		sc.hi *= max(1, sc.avg/(float64(c.words)/float64(c.rows)))
	}
	return sc
}

// score is FTS5's bm25() of d with the columns' weights.
func (sc *scorer) score(d *bm25Doc) float64 {
	s := 0.0
	for t := range sc.q.Terms {
		var freq float64
		for k := range sc.cols {
			freq += columnWeights[k] * float64(d.counts[k][t])
		}
		norm := 1 - bm25B
		if sc.avg > 0 {
			norm += bm25B * float64(d.words) / sc.avg
		}
		s += sc.idf[t] * freq * (bm25K1 + 1) / (freq + bm25K1*norm)
	}
	return s
}

// pendingDocs returns the documents of f.Pending: each with its columns
// and as BM25 sees it. It reads no index, so a search makes them before
// its read transaction, on every core.
func pendingDocs(ctx context.Context, q fulltext.Query, f *Filter) (docs []bm25Doc, cols [][3]string, of []*Pending, msgs []*Message, err error) {
	for i := range f.Pending {
		p := &f.Pending[i]
		for j := range p.Docs {
			m := &p.Docs[j]
			c := [3]string{"", m.Doc.Text, m.Doc.Tool}
			if m.Index < 0 {
				c = [3]string{m.Doc.Text, "", ""}
			}
			cols, of, msgs = append(cols, c), append(of, p), append(msgs, m)
		}
	}
	docs, err = bm25Docs(ctx, q, cols)
	return docs, cols, of, msgs, err
}

// bm25Docs returns the documents of cols as BM25 sees them, made on
// every core: a search under load makes them of everything appended
// since the index's rows, and a tokenizer on one core would leave the
// other idle while the search waits.
func bm25Docs(ctx context.Context, q fulltext.Query, cols [][3]string) ([]bm25Doc, error) {
	docs := make([]bm25Doc, len(cols))
	err := layout.Parallel(ctx, len(cols), func(i int) error {
		docs[i] = newBM25Doc(q, cols[i])
		return nil
	})
	return docs, err
}

// replacedSQL selects the documents of session ?1's messages from ?2
// on, and of its title when ?3. Each half is a range of the index
// msgs_sid (one condition with OR read every message of the session: a
// search under load runs it for every session being appended to, whose
// rows hold thousands of messages, to find the few after ?2).
const replacedSQL = `SELECT docs.title, docs.text, docs.tool FROM msgs m JOIN docs ON docs.rowid = m.rowid
	WHERE m.sid = (SELECT sid FROM sessions WHERE id = ?1) AND m.msg >= ?2
	UNION ALL
	SELECT docs.title, docs.text, docs.tool FROM msgs m JOIN docs ON docs.rowid = m.rowid
	WHERE ?3 AND m.sid = (SELECT sid FROM sessions WHERE id = ?1) AND m.msg < 0`

// replacedDocs reads, in tx, the documents of the index that f.Pending
// replaces: a pending session's messages from from[its ID] on, and its
// title when it changed.
func replacedDocs(ctx context.Context, tx *sql.Tx, q fulltext.Query, f *Filter, from map[session.SessionID]int) ([]bm25Doc, error) {
	var cols [][3]string
	// Prepared once for all the sessions: the driver prepares a
	// statement given as text at each call.
	stmt, err := tx.PrepareContext(ctx, replacedSQL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stmt.Close() }() // read-only
	for i := range f.Pending {
		p := &f.Pending[i]
		rows, err := stmt.QueryContext(ctx, string(p.ID), from[p.ID], p.TitleChanged)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c [3]string
			if err := rows.Scan(&c[0], &c[1], &c[2]); err != nil {
				_ = rows.Close() // read-only
				return nil, err
			}
			cols = append(cols, c)
		}
		err = rows.Err()
		_ = rows.Close() // read-only
		if err != nil {
			return nil, err
		}
	}
	return bm25Docs(ctx, q, cols)
}

// pendingHits returns the hits of q among the pending documents that
// pass f, scored by sc.
func pendingHits(q fulltext.Query, f *Filter, sc *scorer, docs []bm25Doc, cols [][3]string, of []*Pending, msgs []*Message) []fulltext.Hit {
	var out []fulltext.Hit
	for i := range docs {
		p, m := of[i], msgs[i]
		if !pendingMatches(p, f) || !docs[i].holdsAll(sc.cols) {
			continue
		}
		fields, names := []string{cols[i][1], cols[i][2]}, []string{fulltext.FieldText, fulltext.FieldTool}
		if m.Index < 0 {
			fields, names = []string{cols[i][0]}, []string{fulltext.FieldTitle}
		} else if f.NoTools {
			fields = fields[:1]
		}
		h := fulltext.Hit{ID: p.ID, Title: p.Title, Message: m.Index, Role: m.Doc.Role, Revision: m.Rev, Updated: p.Updated.UTC()}
		if m.Index < 0 {
			h.Role = ""
		}
		spans := q.MatchFields(fields...)
		for k := range fields {
			if spans[k] != nil {
				h.Field, h.Text, h.Spans = names[k], fields[k], spans[k]
				break
			}
		}
		if h.Spans == nil {
			continue
		}
		h.Score = sc.score(&docs[i])
		out = append(out, h)
	}
	return out
}

// pendingMatches reports whether the session of p passes f's project
// and label filters, as Search's SQL compares them (the project with
// its trailing slashes trimmed, as Apply stores it).
func pendingMatches(p *Pending, f *Filter) bool {
	if f.Project != "" {
		project := StoredProject(p.Project)
		prefix := strings.TrimSuffix(f.Project, "/") + "/"
		if project != f.Project && (!f.ProjectTree || !likePrefix(project, prefix)) {
			return false
		}
	}
	for k, v := range f.Labels {
		if got, ok := p.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// likePrefix reports whether s begins with prefix as SQLite's LIKE
// 'prefix%' says: ASCII letters in either case.
func likePrefix(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		a, b := s[i], prefix[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// StoredProject is a project as the index stores and filters compare
// it: trailing slashes trimmed (the root stays "/").
func StoredProject(p string) string {
	if t := strings.TrimRight(p, "/"); t != "" || p == "" {
		return t
	}
	return "/"
}
