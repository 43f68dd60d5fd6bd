package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Search runs on PostgreSQL's own full-text search (migration
// 0003_search.sql): every document — a session's title, each message —
// has its distinct words in a tsvector ('simple' configuration: words as
// package fulltext cuts them, nothing stemmed or dropped; the tool text's
// weighted B, so that a search without tools asks for weight A only),
// under a GIN index. A query asks for the documents that hold every
// term's words (a prefix as word:*), each candidate is then checked
// against its stored text with the query's own rules (phrases, word
// boundaries) and ranked (BM25) in Go.
//
// The append's transaction indexes what the append added, under a
// savepoint: an index update that fails is rolled back alone, and never
// fails the append. A session whose index row does not hold its latest
// revision (one imported or migrated, written by an older program, or
// whose update failed) is read from its history by the next search,
// which brings it up to date first: the index is never needed for a
// correct answer.

var (
	_ sessionstore.SearchReindexer = (*Store)(nil)
)

// searchMark is what a writer gave the index last.
type searchMark struct {
	known bool
	rev   uint64
	msgs  sessnap.Messages
}

// maxChunkWords bounds the words of one tsvector row (PostgreSQL caps a
// tsvector at 1 MiB).
const maxChunkWords = 256 << 10

// indexTx indexes revision rev of session id (snapshot snap) in the
// append's transaction, under a savepoint. A failure leaves the index
// as it was (stale: the next search reads the session's history).
func (s *Store) indexTx(ctx context.Context, tx pgx.Tx, m *searchMark, id session.SessionID, rev uint64, snap *sessnap.Snapshot) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		*m = searchMark{}
		return
	}
	err = indexRevision(ctx, sp, m, id, rev, snap, s.now())
	if err == nil {
		err = sp.Commit(ctx)
	}
	if err != nil {
		_ = sp.Rollback(ctx) // the savepoint alone: the append goes on
		*m = searchMark{}
		return
	}
	*m = searchMark{known: true, rev: rev, msgs: snap.Messages}
}

// indexRevision adds what revision rev added to the index, when the
// index holds the revision before it; otherwise it leaves the row for a
// search to bring up to date.
func indexRevision(ctx context.Context, tx pgx.Tx, m *searchMark, id session.SessionID, rev uint64, snap *sessnap.Snapshot, now time.Time) error {
	var row struct {
		rev      int64
		messages int
		digest   []byte
		title    string
		titleRev int64
	}
	err := tx.QueryRow(ctx, `SELECT rev, messages, digest, title, title_rev FROM pgstore_search_sessions WHERE session_id = $1`,
		string(id)).Scan(&row.rev, &row.messages, &row.digest, &row.title, &row.titleRev)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var dig fulltext.Digest
	copy(dig[:], row.digest)
	switch {
	case !exists && rev == 1:
	case !exists, uint64(row.rev) != rev-1, row.messages > len(snap.Messages): //nolint:gosec // G115: revisions are stored from uint64s below 2^63
		return nil // stale: a search reads the history
	case m.known && m.rev == rev-1 && len(m.msgs) == row.messages && continues(m.msgs, snap.Messages):
	default:
		// Not known to continue what the index holds: its digest says.
		var d fulltext.Digest
		for i := range row.messages {
			doc, ok := fulltext.MessageDoc(&snap.Messages[i])
			if !ok {
				return nil // content not loaded: a search reads it
			}
			d = d.Add(&doc)
		}
		if d != dig {
			return nil
		}
	}
	docs := make([]fulltext.Doc, 0, len(snap.Messages)-row.messages)
	for i := row.messages; i < len(snap.Messages); i++ {
		doc, ok := fulltext.MessageDoc(&snap.Messages[i])
		if !ok {
			return nil
		}
		docs = append(docs, doc)
	}
	rd := rowDocs{id: id, rev: rev, updated: now, title: snap.Title, titleRev: rev, project: snap.Workspace.Project, labels: snap.Labels}
	if exists && row.title == snap.Title {
		rd.titleRev = uint64(row.titleRev) //nolint:gosec // G115: as above
	}
	rd.from, rd.docs = row.messages, docs
	rd.revs = make([]uint64, len(docs))
	for i := range rd.revs {
		rd.revs[i] = rev
	}
	rd.digest = dig
	return rd.write(ctx, tx, exists, !exists || row.title != snap.Title)
}

// continues reports whether next begins with prev's messages, for
// certain and at no cost: the same memory, or nothing before.
func continues(prev, next sessnap.Messages) bool {
	return len(next) >= len(prev) && (len(prev) == 0 || &prev[0] == &next[0])
}

// rowDocs is what to write of one session: its row, and its documents
// from message from on (each with the revision it appeared at).
type rowDocs struct {
	id       session.SessionID
	rev      uint64
	updated  time.Time
	title    string
	titleRev uint64
	project  string
	labels   map[string]string
	from     int
	docs     []fulltext.Doc
	revs     []uint64
	digest   fulltext.Digest // of the first from messages
}

// write stores the row and the documents; titleChanged rewrites the
// title's document.
func (rd *rowDocs) write(ctx context.Context, tx pgx.Tx, exists, titleChanged bool) error {
	d := rd.digest
	var words int64
	for i := range rd.docs {
		d = d.Add(&rd.docs[i])
	}
	labels, err := json.Marshal(rd.labels)
	if err != nil || rd.labels == nil {
		labels = []byte("{}")
	}
	project := strings.TrimRight(rd.project, "/")
	if project == "" && rd.project != "" {
		project = "/"
	}
	n := rd.from + len(rd.docs)
	if !exists {
		_, err = tx.Exec(ctx, `INSERT INTO pgstore_search_sessions
			(session_id, rev, messages, digest, title, title_rev, updated, project, labels, words)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)`,
			string(rd.id), int64(rd.rev), n, d[:], rd.title, int64(rd.titleRev), rd.updated, project, labels) //nolint:gosec // G115: revisions are below 2^53
	} else {
		_, err = tx.Exec(ctx, `UPDATE pgstore_search_sessions SET rev = $2, messages = $3, digest = $4, title = $5,
			title_rev = $6, updated = $7, project = $8, labels = $9 WHERE session_id = $1`,
			string(rd.id), int64(rd.rev), n, d[:], rd.title, int64(rd.titleRev), rd.updated, project, labels) //nolint:gosec // G115: revisions are below 2^53
	}
	if err != nil {
		return err
	}
	if titleChanged {
		if _, err := tx.Exec(ctx, `DELETE FROM pgstore_search_docs WHERE session_id = $1 AND msg = -1`, string(rd.id)); err != nil {
			return err
		}
		if rd.title != "" {
			w, err := insertDoc(ctx, tx, rd.id, -1, "", rd.titleRev, fulltext.Doc{Text: rd.title})
			if err != nil {
				return err
			}
			words += w
		}
	}
	for i := range rd.docs {
		w, err := insertDoc(ctx, tx, rd.id, rd.from+i, rd.docs[i].Role, rd.revs[i], rd.docs[i])
		if err != nil {
			return err
		}
		words += w
	}
	_, err = tx.Exec(ctx, `UPDATE pgstore_search_sessions SET words = words + $2 WHERE session_id = $1`, string(rd.id), words)
	return err
}

// insertDoc stores one document and its words; it returns how many
// words it has.
func insertDoc(ctx context.Context, tx pgx.Tx, id session.SessionID, msg int, role session.Role, rev uint64, doc fulltext.Doc) (int64, error) {
	textWords, toolWords := distinct(doc.Text), distinct(doc.Tool)
	n := len(fulltext.Words(doc.Text)) + len(fulltext.Words(doc.Tool))
	if _, err := tx.Exec(ctx, `INSERT INTO pgstore_search_docs (session_id, msg, role, rev, words, body_text, body_tool)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, string(id), msg, string(role), int64(rev), n, doc.Text, doc.Tool); err != nil { //nolint:gosec // G115: revisions are below 2^53
		return 0, err
	}
	chunk := 0
	for len(textWords) > 0 || len(toolWords) > 0 || chunk == 0 {
		a, b := take(&textWords), take(&toolWords)
		if _, err := tx.Exec(ctx, `INSERT INTO pgstore_search_words (session_id, msg, chunk, tsv)
			VALUES ($1, $2, $3, setweight(to_tsvector('simple', $4), 'A') || setweight(to_tsvector('simple', $5), 'B'))`,
			string(id), msg, chunk, a, b); err != nil {
			return 0, err
		}
		chunk++
	}
	return int64(n), nil
}

// distinct returns the distinct words of s.
func distinct(s string) []string {
	seen := map[string]bool{}
	var out []string
	fulltext.Tokens(s, func(t fulltext.Token) bool {
		if !seen[t.Word] {
			seen[t.Word] = true
			out = append(out, t.Word)
		}
		return true
	})
	return out
}

// take removes from *words the words of one chunk and returns them
// joined by spaces.
func take(words *[]string) string {
	var b strings.Builder
	n := 0
	for n < len(*words) && b.Len()+len((*words)[n]) < maxChunkWords {
		b.WriteString((*words)[n])
		b.WriteByte(' ')
		n++
	}
	if n == 0 && len(*words) > 0 { // one word longer than a chunk: PostgreSQL does not index it anyway
		n = 1
	}
	*words = (*words)[n:]
	return b.String()
}

// Search implements sessionstore.Store.
func (s *Store) Search(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	q, fq, err := adapter.ReadySearch(s.ready(ctx), q)
	if err != nil {
		return sessionstore.SearchResult{}, err
	}
	res := sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}}
	if res.Indexed, res.Unreadable, err = s.catchUp(ctx, false); err != nil {
		return sessionstore.SearchResult{}, err
	}
	hits, err := s.query(ctx, fq, q)
	if err != nil {
		return sessionstore.SearchResult{}, opErr("search", "", err)
	}
	res.Hits = adapter.SearchHits(hits)
	return res, nil
}

// tsquery is the tsquery text of term t: its words ANDed, the last one a
// prefix for a prefix term, weight A only for a search without tools.
func tsquery(t fulltext.Term, noTools bool) string {
	parts := make([]string, len(t.Words))
	for i, w := range t.Words {
		// Words are letters, digits and marks: nothing to escape.
		p := "'" + w + "'"
		suffix := ""
		if i == len(t.Words)-1 && t.Prefix {
			suffix = "*"
		}
		if noTools {
			suffix += "A"
		}
		if suffix != "" {
			p += ":" + suffix
		}
		parts[i] = p
	}
	return "(" + strings.Join(parts, " & ") + ")"
}

// query returns the hits of fq in the index, best first.
func (s *Store) query(ctx context.Context, fq fulltext.Query, q sessionstore.SearchQuery) ([]fulltext.Hit, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var anyOf, all []string
	for _, t := range fq.Terms {
		p := "to_tsquery('simple', " + arg(tsquery(t, q.NoTools)) + ")"
		anyOf = append(anyOf, p)
		all = append(all, "bool_or(w.tsv @@ "+p+")")
	}
	where := []string{"w.tsv @@ (" + strings.Join(anyOf, " || ") + ")"}
	if q.Project != "" {
		if q.ProjectTree {
			prefix := strings.TrimSuffix(q.Project, "/") + "/"
			where = append(where, "(x.project = "+arg(q.Project)+" OR starts_with(x.project, "+arg(prefix)+"))")
		} else {
			where = append(where, "x.project = "+arg(q.Project))
		}
	}
	if len(q.Labels) > 0 {
		b, err := json.Marshal(q.Labels)
		if err != nil {
			return nil, err
		}
		where = append(where, "x.labels @> "+arg(string(b))+"::jsonb")
	}
	sql := `WITH c AS (
			SELECT w.session_id, w.msg FROM pgstore_search_words w JOIN pgstore_search_sessions x ON x.session_id = w.session_id
			WHERE ` + strings.Join(where, " AND ") + `
			GROUP BY w.session_id, w.msg HAVING ` + strings.Join(all, " AND ") + `)
		SELECT d.session_id, d.msg, d.role, d.rev, d.words, d.body_text, d.body_tool, x.title, x.updated
		FROM c JOIN pgstore_search_docs d ON d.session_id = c.session_id AND d.msg = c.msg
		JOIN pgstore_search_sessions x ON x.session_id = d.session_id`
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	type cand struct {
		h     fulltext.Hit
		words int
		freq  []int
	}
	var cands []cand
	for rows.Next() {
		var c cand
		var role, text, tool string
		var rev int64
		if err := rows.Scan(&c.h.ID, &c.h.Message, &role, &rev, &c.words, &text, &tool, &c.h.Title, &c.h.Updated); err != nil {
			rows.Close()
			return nil, err
		}
		c.h.Role, c.h.Revision, c.h.Updated = session.Role(role), uint64(rev), c.h.Updated.UTC() //nolint:gosec // G115: revisions are >= 1
		fields, names := []string{text, tool}, []string{fulltext.FieldText, fulltext.FieldTool}
		switch {
		case c.h.Message < 0:
			fields, names = fields[:1], []string{fulltext.FieldTitle}
		case q.NoTools:
			fields = fields[:1]
		}
		spans := fq.MatchFields(fields...)
		for i := range fields {
			if spans[i] != nil {
				c.h.Field, c.h.Text, c.h.Spans = names[i], fields[i], spans[i]
				break
			}
		}
		if c.h.Spans == nil {
			continue // the words are there, not in the query's order
		}
		for _, t := range fq.Terms {
			n := 0
			for _, f := range fields {
				n += len(fulltext.Query{Terms: []fulltext.Term{t}}.Match(f))
			}
			c.freq = append(c.freq, n)
		}
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var docs, words int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(messages + (title <> '')::int), 0), coalesce(sum(words), 0) FROM pgstore_search_sessions`).Scan(&docs, &words); err != nil {
		return nil, err
	}
	sc := fulltext.Scorer{Docs: int(docs)}
	if docs > 0 {
		sc.AvgLen = float64(words) / float64(docs)
	}
	hits := make([]fulltext.Hit, len(cands))
	for i := range cands {
		for _, f := range cands[i].freq {
			cands[i].h.Score += sc.Term(f, cands[i].words, len(cands))
		}
		hits[i] = cands[i].h
	}
	fulltext.SortHits(hits)
	return hits[:min(len(hits), q.Limit)], nil
}

// catchUp brings the index up to date with every session whose row does
// not hold its latest revision (all of them with all), reading each from
// its history. It returns how many it indexed and those it could not
// read.
func (s *Store) catchUp(ctx context.Context, all bool) (int, []summary.Unreadable, error) {
	cond := `x.session_id IS NULL OR x.rev <> m.revision`
	if all {
		cond = "true"
	}
	rows, err := s.pool.Query(ctx, `SELECT m.session_id FROM pgstore_summaries m
		LEFT JOIN pgstore_search_sessions x ON x.session_id = m.session_id WHERE `+cond+` ORDER BY m.session_id`)
	if err != nil {
		return 0, nil, opErr("search", "", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, nil, opErr("search", "", err)
	}
	var bad []summary.Unreadable
	n := 0
	for _, id := range ids {
		err := s.reindexSession(ctx, session.SessionID(id))
		switch {
		case err == nil:
			n++
		case errors.Is(err, sessionstore.ErrNotFound):
			// deleted meanwhile
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, sessionstore.ErrClosed):
			return n, bad, err
		default:
			bad = append(bad, summary.UnreadableOf(session.SessionID(id), err))
		}
	}
	return n, bad, nil
}

// reindexSession replaces what the index holds of session id with what
// its history says, under the session's row lock (so that no append
// indexes it meanwhile).
func (s *Store) reindexSession(ctx context.Context, id session.SessionID) error {
	ix := fulltext.NewIndex()
	var last sessionstore.Record
	for rec, err := range s.History(ctx, id) {
		if errors.Is(err, sessionstore.ErrRevisionsMissing) {
			continue // revisions a repair set aside: nothing to index
		}
		if err != nil {
			return err
		}
		ix.Put(fulltext.Revision{ID: id, Revision: rec.Revision, Title: rec.Snapshot.Title, Messages: rec.Snapshot.Messages})
		last = rec
	}
	if last.Revision == 0 {
		return fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	title, titleRev, docs, revs, _ := ix.Docs(id)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var rev int64
		err := tx.QueryRow(ctx, `SELECT m.revision FROM pgstore_sessions s JOIN pgstore_summaries m ON m.session_id = s.id
			WHERE s.id = $1 FOR UPDATE OF s`, string(id)).Scan(&rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM pgstore_search_sessions WHERE session_id = $1`, string(id)); err != nil {
			return err
		}
		rd := rowDocs{id: id, rev: last.Revision, updated: last.Time, title: title, titleRev: titleRev,
			project: last.Snapshot.Workspace.Project, labels: last.Snapshot.Labels, docs: docs, revs: revs}
		// An append since the history was read: the row says the
		// revision it holds, and the next search reads the session again.
		return rd.write(ctx, tx, false, true)
	})
}

// ReindexSearch implements sessionstore.SearchReindexer: every session is
// indexed again from its history.
func (s *Store) ReindexSearch(ctx context.Context) (sessionstore.SearchIndexReport, error) {
	if err := s.ready(ctx); err != nil {
		return sessionstore.SearchIndexReport{}, err
	}
	n, bad, err := s.catchUp(ctx, true)
	sort.Slice(bad, func(i, j int) bool { return bad[i].ID < bad[j].ID })
	return sessionstore.SearchIndexReport{Sessions: n, Unreadable: bad}, err
}
