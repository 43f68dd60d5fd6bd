package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/highlight/highlighter/html"
)

// runSearchLib is SL, the measurement the search index's library was
// chosen by: SQLite's FTS5 (through modernc.org/sqlite, pure Go) against
// bleve (scorch), on the same corpus of agent messages, each given the
// same work — a document per message with its text stored (for
// snippets) and positions kept (for phrases), tokenized alike (Unicode
// words, lower-cased, nothing stemmed or dropped). The corpus is indexed
// in bulk first (batches of 1,000 messages); then single appends, one
// message each in its own transaction (FTS5: the message and its
// session's watermark row) or batch (bleve), the two taking turns; then
// the search for the rare word in a fresh process (open, query, read the
// 20 best hits with their snippets, exit).
func runSearchLib(ctx context.Context, c *config, r *report) error {
	dir := filepath.Join(c.dir, "sl")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath, blevePath := filepath.Join(dir, "fts5.db"), filepath.Join(dir, "bleve")
	fts, err := openFTS5(dbPath, true)
	if err != nil {
		return err
	}
	defer fts.Close()
	bl, err := newBleve(blevePath)
	if err != nil {
		return err
	}
	defer bl.Close()

	const msgs, msgBytes = 10, 1 << 10
	cp := newCorpus(1)
	rareAt := c.slSessions / 2
	var textBytes int64
	bulk := func(from, to int, fn func(docs []slDoc) error) error {
		var docs []slDoc
		for s := from; s < to; s++ {
			for m := range msgs {
				t := cp.text(msgBytes)
				if s == rareAt && m == msgs/2 {
					t = plant(t)
				}
				textBytes += int64(len(t))
				docs = append(docs, slDoc{id: corpusDoc(s, m), session: s, text: t})
			}
		}
		return fn(docs)
	}
	var ftsBulk, bleveBulk time.Duration
	for from := 0; from < c.slSessions; from += 100 {
		to := min(from+100, c.slSessions)
		var docs []slDoc
		if err := bulk(from, to, func(d []slDoc) error { docs = d; return nil }); err != nil {
			return err
		}
		t0 := time.Now()
		if err := fts.add(docs); err != nil {
			return err
		}
		t1 := time.Now()
		if err := bl.add(docs); err != nil {
			return err
		}
		ftsBulk += t1.Sub(t0)
		bleveBulk += time.Since(t1)
	}

	// Single appends, taking turns.
	rng := rand.New(rand.NewPCG(3, 3))
	next := map[int]int{}
	var pending slDoc
	newDoc := func() {
		s := rng.IntN(c.slSessions)
		next[s]++
		pending = slDoc{id: corpusDoc(s, msgs-1+next[s]), session: s, text: cp.text(msgBytes)}
	}
	newDoc()
	done := 0
	ops := []func() error{
		func() error { return fts.add([]slDoc{pending}) },
		func() error { return bl.add([]slDoc{pending}) },
	}
	after := []func() error{nil, func() error { done++; newDoc(); return nil }}
	appends, err := interleaveAfter(ops, after, c.slAppends, 0)
	if err != nil {
		return err
	}
	if err := fts.Close(); err != nil {
		return err
	}
	if err := bl.Close(); err != nil {
		return err
	}
	ftsSize, err := dirSize(dir + "/fts5.db")
	if err != nil {
		ftsSize = -1
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if n, err := dirSize(dbPath + ext); err == nil {
			ftsSize += n
		}
	}
	bleveSize, err := dirSize(blevePath)
	if err != nil {
		return err
	}

	kinds := []struct{ mode, arg string }{{"sl-fts5", dbPath}, {"sl-bleve", blevePath}, {"noop", ""}}
	inChild := make([]*sample, len(kinds))
	wall := make([]*sample, len(kinds))
	rss := make([]int64, len(kinds))
	for i := range kinds {
		inChild[i], wall[i] = &sample{}, &sample{}
	}
	for round := range c.slFresh {
		for _, k := range rotate(len(kinds), round) {
			res, err := spawn(kinds[k].mode, kinds[k].arg, rareWord)
			if err != nil {
				return err
			}
			if kinds[k].mode != "noop" && res.fields["hits"] != "1" {
				return fmt.Errorf("%s: %s hits for the rare word, want 1", kinds[k].mode, res.fields["hits"])
			}
			inChild[k].add(res.ns(), 0)
			wall[k].add(res.wall, 0)
			rss[k] = max(rss[k], res.maxRSS)
		}
	}
	_ = ctx

	docs := c.slSessions * msgs
	t := &table{
		title: fmt.Sprintf("SL search index library: SQLite FTS5 vs bleve, %d messages of %s (%s of text)", docs, fmtBytes(msgBytes), fmtBytes(textBytes)),
		cols:  []string{"measure", "SQLite FTS5", "bleve", "bleve ÷ FTS5"},
	}
	ratio := func(a, b float64) string { return fmtRatio(b / a) }
	t.add("bulk index (batches of 1,000 messages), MB/s",
		fmtNum(float64(textBytes)/ftsBulk.Seconds()/1e6), fmtNum(float64(textBytes)/bleveBulk.Seconds()/1e6),
		ratio(1/ftsBulk.Seconds(), 1/bleveBulk.Seconds()))
	t.add(fmt.Sprintf("one append (a 1 KiB message), p50 of %d", c.slAppends), fmtDur(appends[0].pct(50)), fmtDur(appends[1].pct(50)),
		ratio(float64(appends[0].pct(50)), float64(appends[1].pct(50))))
	t.add("one append, p99", fmtDur(appends[0].pct(99)), fmtDur(appends[1].pct(99)),
		ratio(float64(appends[0].pct(99)), float64(appends[1].pct(99))))
	t.add("index size on disk", fmtBytes(ftsSize), fmtBytes(bleveSize), ratio(float64(ftsSize), float64(bleveSize)))
	t.add("index size ÷ text", fmt.Sprintf("%.2f×", float64(ftsSize)/float64(textBytes)), fmt.Sprintf("%.2f×", float64(bleveSize)/float64(textBytes)), "")
	t.add(fmt.Sprintf("rare word, fresh process: open + query + 20 hits, p50 of %d", c.slFresh), fmtDur(inChild[0].pct(50)), fmtDur(inChild[1].pct(50)),
		ratio(float64(inChild[0].pct(50)), float64(inChild[1].pct(50))))
	t.add("rare word, fresh process, exec to exit, p50", fmtDur(wall[0].pct(50)), fmtDur(wall[1].pct(50)),
		ratio(float64(wall[0].pct(50)), float64(wall[1].pct(50))))
	t.add("peak RSS of that process", fmtBytes(rss[0]), fmtBytes(rss[1]), ratio(float64(rss[0]), float64(rss[1])))
	t.note("(ref) an empty child process, exec to exit: %s (p50)", fmtDur(wall[2].pct(50)))
	t.note("FTS5: journal_mode WAL, synchronous NORMAL (the index is a cache: nothing is synced per append), tokenizer unicode61 without diacritics removal; a message is a row (its text stored), each append also updates its session's watermark row")
	t.note("bleve: scorch, a custom analyzer (unicode tokenizer, lower case), the text stored with term vectors (phrases, highlights); a batch returns once its segment is introduced and is persisted in the background, so its append time leaves out the persister's and merger's work")
	t.note("bleve's index is one writer process at a time (an exclusive lock on its root.bolt): many agents appending at once cannot share it; SQLite's is shared by every process, one write transaction at a time")
	r.add(t)
	return nil
}

// slDoc is one message to index.
type slDoc struct {
	id      string
	session int
	text    string
}

// ftsIndex is the FTS5 side of SL.
type ftsIndex struct{ db *sql.DB }

func openFTS5(path string, create bool) (*ftsIndex, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if create {
		for _, q := range []string{
			`CREATE VIRTUAL TABLE docs USING fts5(doc UNINDEXED, text, tokenize='unicode61 remove_diacritics 0')`,
			`CREATE TABLE watermarks (session INTEGER PRIMARY KEY, messages INTEGER NOT NULL)`,
		} {
			if _, err := db.Exec(q); err != nil {
				db.Close()
				return nil, err
			}
		}
	}
	return &ftsIndex{db: db}, nil
}

func (f *ftsIndex) add(docs []slDoc) error {
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, d := range docs {
		if _, err := tx.Exec(`INSERT INTO docs (doc, text) VALUES (?, ?)`, d.id, d.text); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO watermarks (session, messages) VALUES (?, 1) ON CONFLICT (session) DO UPDATE SET messages = messages + 1`, d.session); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (f *ftsIndex) Close() error {
	if f.db == nil {
		return nil
	}
	err := f.db.Close()
	f.db = nil
	return err
}

// search returns the best hits for word with their snippets.
func (f *ftsIndex) search(word string, limit int) ([]string, error) {
	rows, err := f.db.Query(`SELECT doc, snippet(docs, 1, '[', ']', '…', 12) FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?`, `"`+word+`"`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var doc, snip string
		if err := rows.Scan(&doc, &snip); err != nil {
			return nil, err
		}
		out = append(out, doc+" "+snip)
	}
	return out, rows.Err()
}

// bleveIndex is the bleve side of SL.
type bleveIndex struct{ idx bleve.Index }

func bleveMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomAnalyzer("words", map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []string{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	text := bleve.NewTextFieldMapping()
	text.Analyzer = "words"
	text.Store = true
	text.IncludeTermVectors = true
	sess := bleve.NewNumericFieldMapping()
	sess.Store = false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("text", text)
	doc.AddFieldMappingsAt("session", sess)
	m.DefaultMapping = doc
	m.DefaultAnalyzer = "words"
	return m, nil
}

func newBleve(path string) (*bleveIndex, error) {
	m, err := bleveMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.New(path, m)
	if err != nil {
		return nil, err
	}
	return &bleveIndex{idx: idx}, nil
}

func (b *bleveIndex) add(docs []slDoc) error {
	batch := b.idx.NewBatch()
	for _, d := range docs {
		if err := batch.Index(d.id, map[string]any{"text": d.text, "session": float64(d.session)}); err != nil {
			return err
		}
	}
	return b.idx.Batch(batch)
}

func (b *bleveIndex) Close() error {
	if b.idx == nil {
		return nil
	}
	err := b.idx.Close()
	b.idx = nil
	return err
}

// slChild runs the fresh-process search of SL in mode sl-fts5 or sl-bleve.
func slChild(mode, path, word string) error {
	start := time.Now()
	var hits []string
	switch mode {
	case "sl-fts5":
		f, err := openFTS5(path, false)
		if err != nil {
			return err
		}
		defer f.Close()
		if hits, err = f.search(word, 20); err != nil {
			return err
		}
	case "sl-bleve":
		idx, err := bleve.Open(path)
		if err != nil {
			return err
		}
		defer idx.Close()
		q := bleve.NewMatchQuery(word)
		q.SetField("text")
		req := bleve.NewSearchRequestOptions(q, 20, 0, false)
		req.Highlight = bleve.NewHighlightWithStyle(html.Name)
		req.Highlight.AddField("text")
		res, err := idx.Search(req)
		if err != nil {
			return err
		}
		for _, h := range res.Hits {
			hits = append(hits, h.ID+" "+strings.Join(h.Fragments["text"], " "))
		}
	}
	result("ns=%d hits=%d", time.Since(start).Nanoseconds(), len(hits))
	return nil
}
