package searchindex

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// proofOf is the state of a log file as the search index records it.
func proofOf(fi fs.FileInfo) searchdb.Proof {
	id := vfs.IdentityOf(fi)
	return searchdb.Proof{Dev: id.Dev, Ino: id.Ino, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

// indexed is a session as its log says the search index should hold it:
// the latest revision's title, project and labels, and the docs of its
// messages from the base-th on, each with the revision it appeared at.
// A read of the whole log has base 0; a read of what was appended after
// a row's revision (readAppended, readAfter) starts at the row's
// messages, whose digest it continues.
type indexed struct {
	head   searchdb.Update    // every field of the update but the messages, their digest and the state it builds on
	base   int                // docs[0] is message base
	docs   []searchdb.Message // messages base to head.Messages-1
	from   fulltext.Digest    // the digest of the first base messages
	digest []fulltext.Digest  // digest[i]: the chain over the first base+i messages (digests makes it)
	// first is the time of the first record after the row's revision, for
	// a read after a row (zero otherwise): the appends read were made
	// from first to head.Updated (leftToHolder).
	first time.Time
}

// newIndexed returns the indexed of a read whose docs start at message
// base, after base messages whose digest is d.
func newIndexed(head searchdb.Update, base int, d fulltext.Digest, docs []searchdb.Message) *indexed {
	return &indexed{head: head, base: base, docs: docs, from: d}
}

// digests returns ix's chain of digests, made at its first use: only an
// update written to the index needs it (a hash of every document read),
// and a search under load searches most of what it reads beside the
// index (searchdb.Pending) without writing it.
func (ix *indexed) digests() []fulltext.Digest {
	if ix.digest == nil {
		ix.digest = make([]fulltext.Digest, len(ix.docs)+1)
		ix.digest[0] = ix.from
		for i := range ix.docs {
			ix.digest[i+1] = ix.digest[i].Add(&ix.docs[i].Doc)
		}
	}
	return ix.digest
}

// whole reports whether ix holds every message (a read of the whole log).
func (ix *indexed) whole() bool { return ix.base == 0 }

// updateFor is the update that brings the session's row, in state st
// (has false: there is none), to what ix read: the messages after the
// row's when the row holds the conversation's first ones as ix read
// them (their digest says so, and they appeared by the row's revision),
// else, for a read of the whole log, a reset. ok is false when ix cannot
// bring the row there (it read less than the row lacks).
func (ix *indexed) updateFor(st searchdb.State, has bool) (u searchdb.Update, ok bool) {
	if has {
		if u, ok := ix.extend(st); ok {
			return u, true
		}
	}
	if !ix.whole() {
		return searchdb.Update{}, false
	}
	u = ix.head
	u.Reset, u.Add, u.Digest = true, ix.docs, ix.digests()[len(ix.docs)]
	return u, true
}

// extend is the update adding to a row in state st the messages it
// lacks, when st is a state ix's read went through.
func (ix *indexed) extend(st searchdb.State) (searchdb.Update, bool) {
	k := st.Messages - ix.base
	if k < 0 || st.Messages > ix.head.Messages || st.Rev > ix.head.Rev || ix.digests()[k] != st.Digest {
		return searchdb.Update{}, false
	}
	for _, m := range ix.docs[:k] {
		if m.Rev > st.Rev {
			return searchdb.Update{}, false // the log says an indexed message appeared later: start again
		}
	}
	for _, m := range ix.docs[k:] {
		if m.Rev <= st.Rev {
			return searchdb.Update{}, false // one the row lacks appeared by its revision: not the row's history
		}
	}
	u := ix.head
	u.FromRev, u.FromMessages, u.Add, u.Digest = st.Rev, st.Messages, ix.docs[k:], ix.digests()[len(ix.docs)]
	return u, true
}

// readIndexed reads what the index should hold of session id from its
// log.
//
// With a row (st: what the index holds of the session), it reads only
// what was appended since, when it can (readAppended: the records after
// the row's revision and the content of the messages they add), or the
// records after the row's revision and the latest revision's content
// (readAfter). Otherwise, or when those records do more than add
// messages to the ones the row holds, it reads the latest revision with
// its content, and the history's records (not rebuilt: their payloads
// are read for message counts and titles) for the revision each message
// and the title appeared at: the cost of reading the log and the latest
// revision's content once.
func (x *Index) readIndexed(ctx context.Context, id session.SessionID, st *searchdb.State) (*indexed, error) {
	var out *indexed
	err := x.h.ReadLog(ctx, id, func(v searchhost.Log) error {
		fi, err := v.Stat()
		if err != nil {
			return err
		}
		// The proof is taken before the log is read: a later append makes
		// it stale, never the other way round.
		proof := proofOf(fi)
		if size := v.Size(); proof.Size != size {
			proof.Size = size
		}
		if st != nil {
			if ix := readAppended(id, v, st, proof); ix != nil {
				x.stats.appended.Add(1)
				out = ix
				return nil
			}
		}
		last, rec, err := v.LoadLatest()
		if err != nil {
			return err
		}
		msgs := rec.Snapshot.Messages
		if st != nil {
			if ix := readAfter(id, v, last, &rec, st, proof); ix != nil {
				out = ix
				return nil
			}
		}
		counts, titleRev, err := historyCounts(v, rec.Revision)
		if err != nil {
			return err
		}
		revs, ok := fulltext.Appearances(0, counts, 0)
		if !ok || len(revs) != len(msgs) {
			// The history's counts and the snapshot disagree (they are
			// read from the same file, so this is damage that the read
			// missed): every message counts from the latest revision.
			revs = make([]uint64, len(msgs))
			for i := range revs {
				revs[i] = rec.Revision
			}
		}
		head := searchdb.Update{ID: id, Rev: rec.Revision, Messages: len(msgs),
			Title: rec.Snapshot.Title, TitleRev: max(titleRev, 1), Updated: rec.Time,
			Project: rec.Snapshot.Workspace.Project, Labels: rec.Snapshot.Labels, Proof: proof}
		docs := make([]searchdb.Message, len(msgs))
		for i := range msgs {
			doc, _ := fulltext.MessageDoc(&msgs[i]) // loaded with its content
			docs[i] = searchdb.Message{Index: i, Rev: revs[i], Doc: doc}
		}
		x.stats.wholeReads.Add(1)
		out = newIndexed(head, 0, fulltext.Digest{}, docs)
		return nil
	})
	return out, err
}

// readAppended is readIndexed's way for a row in state st when the log
// is the file the row was read from and has only grown since: the
// records after the row's revision, read backwards from the end of the
// log, must begin exactly where the log ended when the row was read
// (its size), after the record of the row's revision (its revision
// number and time), and only append messages, leaving the title's
// history, the labels and the workspace to what they say. Then the
// messages they append are decoded from the records and their content
// read, and nothing else: the read costs what was appended, whatever the
// session's size. The row's digest is continued over the new messages.
// It returns nil when any of this does not hold (readIndexed then reads
// more).
func readAppended(id session.SessionID, v searchhost.Log, st *searchdb.State, proof searchdb.Proof) *indexed {
	p := st.Proof
	if st.Rev == 0 || p.Dev != proof.Dev || p.Ino != proof.Ino || p.Size > v.Size() {
		return nil
	}
	last, err := v.Latest()
	if err != nil || last.Rev < st.Rev {
		return nil
	}
	// The records after st.Rev, newest first, down to st.Rev's.
	var after []*record.Rec
	r := last
	for r.Rev > st.Rev {
		if r.Kind != record.KindDelta || r.Offset < p.Size || len(after) >= maxReadAfter {
			return nil
		}
		after = append(after, r.Clone())
		prev, err := v.Before(r)
		if err != nil || prev == nil {
			return nil
		}
		r = prev
	}
	if r.Rev != st.Rev || r.End() != p.Size || r.Time.UnixNano() != st.Updated.UnixNano() {
		return nil // not the log, or not the state of it, that the row was read from
	}
	var conv record.Conversation
	conv.StartAt(st.Messages)
	counts := make([]fulltext.Count, len(after))
	n, title, titleRev := st.Messages, st.Title, uint64(0)
	for k := range after {
		r := after[len(after)-1-k]
		next, kept, err := conv.Apply(r.Kind, r.Payload)
		if err != nil || kept != n {
			return nil // it changes a message: only a whole read tells which
		}
		counts[k], n = fulltext.Count{N: next, Kept: kept}, next
		for _, key := range []string{labelsKey, workspaceKey} {
			if _, changed, err := record.MemberChange(r.Kind, r.Payload, key); err != nil || changed {
				return nil
			}
		}
		var ok bool
		if title, titleRev, ok = titleAfter(r, title, titleRev); !ok {
			return nil
		}
	}
	revs, ok := fulltext.Appearances(st.Rev, counts, st.Messages)
	if !ok || len(revs) != n-st.Messages {
		return nil
	}
	// The new messages, as the records wrote them, with their content:
	// decoded as the array of a snapshot of nothing else, so that
	// sessnap's decoder for what writers store reads them, without
	// encoding/json's reflection and validation pass.
	elems := conv.Elems(st.Messages)
	size := len(msgsOpen) + 2
	for _, e := range elems {
		size += len(e) + 1
	}
	snap := make([]byte, 0, size)
	snap = append(snap, msgsOpen...)
	for i, e := range elems {
		if e == nil {
			return nil
		}
		if i > 0 {
			snap = append(snap, ',')
		}
		snap = append(snap, e...)
	}
	snap = append(snap, "]}"...)
	decoded, err := sessnap.Unmarshal(snap)
	msgs := decoded.Messages
	if err != nil || len(msgs) != len(revs) {
		return nil
	}
	if err := v.Resolve(msgs); err != nil {
		return nil // a whole read reports it
	}
	docs := make([]searchdb.Message, len(msgs))
	for i := range msgs {
		doc, _ := fulltext.MessageDoc(&msgs[i]) // resolved
		docs[i] = searchdb.Message{Index: st.Messages + i, Rev: revs[i], Doc: doc}
	}
	head := searchdb.Update{ID: id, Rev: last.Rev, Messages: n, Title: title, TitleRev: max(titleRev, 1),
		Updated: last.Time, Project: st.Project, Labels: st.Labels, Proof: proof}
	ix := newIndexed(head, st.Messages, st.Digest, docs)
	ix.first = firstTime(after)
	return ix
}

// readAfter is readIndexed's way for a row in state st: from the records
// after st.Rev alone, and the latest revision's messages rec. It returns
// nil when they do not merely add messages to the row's (or are not all
// in the log).
func readAfter(id session.SessionID, v searchhost.Log, last *record.Rec, rec *sessionstore.Record, st *searchdb.State, proof searchdb.Proof) *indexed {
	msgs := rec.Snapshot.Messages
	if st.Rev == 0 || st.Rev > rec.Revision || st.Messages > len(msgs) {
		return nil
	}
	// The records after st.Rev, newest first.
	var after []*record.Rec
	for r := last; r.Rev > st.Rev; {
		if r.Kind == record.KindGap || len(after) >= maxReadAfter {
			return nil
		}
		after = append(after, r.Clone())
		prev, err := v.Before(r)
		if err != nil || prev == nil {
			return nil // archived, or damage the whole read reports
		}
		r = prev
	}
	var conv record.Conversation
	conv.StartAt(st.Messages)
	counts := make([]fulltext.Count, len(after))
	titleRev, title := uint64(0), st.Title
	for k := range after {
		r := after[len(after)-1-k]
		n, kept, err := conv.Apply(r.Kind, r.Payload)
		if err != nil {
			return nil
		}
		counts[k] = fulltext.Count{N: n, Kept: kept}
		var ok bool
		if title, titleRev, ok = titleAfter(r, title, titleRev); !ok {
			return nil
		}
	}
	revs, ok := fulltext.Appearances(st.Rev, counts, st.Messages)
	if !ok || len(revs) != len(msgs)-st.Messages {
		return nil
	}
	var d fulltext.Digest
	for i := range st.Messages {
		doc, _ := fulltext.MessageDoc(&msgs[i]) // loaded with its content
		d = d.Add(&doc)
	}
	if d != st.Digest {
		return nil // not the conversation the row holds
	}
	docs := make([]searchdb.Message, 0, len(msgs)-st.Messages)
	for i := st.Messages; i < len(msgs); i++ {
		doc, _ := fulltext.MessageDoc(&msgs[i]) // loaded with its content
		docs = append(docs, searchdb.Message{Index: i, Rev: revs[i-st.Messages], Doc: doc})
	}
	head := searchdb.Update{ID: id, Rev: rec.Revision, Messages: len(msgs),
		Title: rec.Snapshot.Title, TitleRev: max(titleRev, 1), Updated: rec.Time,
		Project: rec.Snapshot.Workspace.Project, Labels: rec.Snapshot.Labels, Proof: proof}
	ix := newIndexed(head, st.Messages, st.Digest, docs)
	ix.first = firstTime(after)
	return ix
}

// firstTime is the time of the oldest of after, records read back from
// the end of a log (zero for none).
func firstTime(after []*record.Rec) time.Time {
	if len(after) == 0 {
		return time.Time{}
	}
	return after[len(after)-1].Time
}

// msgsOpen begins the snapshot readAppended decodes the new messages
// from.
const msgsOpen = `{"messages":[`

// maxReadAfter bounds how many records readAfter reads back before it
// leaves the work to a read of the whole history.
const maxReadAfter = 4096

// The members of a snapshot the index holds besides its messages.
const (
	titleKey     = `"title"`
	labelsKey    = `"labels"`
	workspaceKey = `"workspace"`
)

// errShortHistory reports a history that ends before the revision read
// as the latest (damage a read of the latest alone does not see).
var errShortHistory = errors.New("jsonlstore: the history ends before its latest revision")

// titleAfter returns the title after record r, and the revision it was
// set at, given title, set at rev, before it; ok is false when r's title
// does not decode.
func titleAfter(r *record.Rec, title string, rev uint64) (_ string, _ uint64, ok bool) {
	val, changed, err := record.MemberChange(r.Kind, r.Payload, titleKey)
	if err != nil {
		return title, rev, false
	}
	if changed {
		var t string
		if val != nil && json.Unmarshal(val, &t) != nil {
			return title, rev, false
		}
		if t != title {
			return t, r.Rev, true
		}
	}
	return title, rev, true
}

// historyCounts reads session id's history up to revision last and
// returns each revision's message count and the revision its title (as
// at last) was set at.
func historyCounts(v searchhost.Log, last uint64) ([]fulltext.Count, uint64, error) {
	h := v.History()
	defer h.Close()
	counts := make([]fulltext.Count, 0, last)
	var conv record.Conversation
	var title []byte
	var titleRev uint64
	for h.Next() {
		r := h.Record()
		if r.Rev > last {
			break
		}
		if r.Kind == record.KindGap {
			// The revisions a repair set aside hold nothing the index can
			// use; the record after a gap is a full record.
			for rev := r.Rev; rev <= r.Through() && rev <= last; rev++ {
				counts = append(counts, fulltext.Count{})
			}
			conv.Reset()
			continue
		}
		n, kept, err := conv.Apply(r.Kind, r.Payload)
		if err != nil {
			return nil, 0, err
		}
		counts = append(counts, fulltext.Count{N: n, Kept: kept})
		t, changed, err := record.MemberChange(r.Kind, r.Payload, titleKey)
		if err != nil {
			return nil, 0, err
		}
		if changed && string(t) != string(title) {
			title, titleRev = append(title[:0], t...), r.Rev
		}
	}
	if err := h.Err(); err != nil {
		return nil, 0, err
	}
	if uint64(len(counts)) != last {
		return nil, 0, errShortHistory
	}
	if len(title) > 0 {
		var t string
		if json.Unmarshal(title, &t) != nil || t == "" {
			titleRev = last
		}
	}
	return counts, titleRev, nil
}
