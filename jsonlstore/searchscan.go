package jsonlstore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// proofOf is the state of a log file as the search index records it.
func proofOf(fi fs.FileInfo) searchdb.Proof {
	id := vfs.IdentityOf(fi)
	return searchdb.Proof{Dev: id.Dev, Ino: id.Ino, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}

// indexed is a session as its log says the search index should hold it:
// the latest revision's title, project, labels and every message's doc
// with the revision it appeared at.
type indexed struct {
	update searchdb.Update // Reset: every message in Add; else the messages after the row's
	digest []fulltext.Digest
}

// readIndexed reads what the index should hold of session id from its
// log: the latest revision with its content, and the history's records
// (not rebuilt: their payloads are read for message counts and titles)
// for the revision each message and the title appeared at. Its cost is
// reading the log and the latest revision's content once.
//
// With a row (st: what the index holds of the session), only the
// records after the row's revision are read, backwards from the end of
// the log, when they merely add messages to the ones the row holds (its
// digest says they are the conversation's first): the update then adds
// the new messages. Otherwise it is a reset, read from the whole history.
func (s *Store) readIndexed(ctx context.Context, id session.SessionID, st *searchdb.State) (*indexed, error) {
	var out *indexed
	err := s.read(ctx, id, func(v *view) error {
		fi, err := v.f.Stat()
		if err != nil {
			return err
		}
		// The proof is taken before the log is read: a later append makes
		// it stale, never the other way round.
		proof := proofOf(fi)
		if proof.Size != v.size {
			proof.Size = v.size
		}
		last, rec, err := s.loadLatest(id, v, false)
		if err != nil {
			return err
		}
		msgs := rec.Snapshot.Messages
		if st != nil {
			if ix := s.readAfter(id, v, last, &rec, st, proof); ix != nil {
				out = ix
				return nil
			}
		}
		counts, titleRev, err := s.historyCounts(id, v, rec.Revision)
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
		ix := &indexed{digest: make([]fulltext.Digest, len(msgs)+1)}
		u := &ix.update
		*u = searchdb.Update{ID: id, Reset: true, Rev: rec.Revision, Messages: len(msgs),
			Title: rec.Snapshot.Title, TitleRev: max(titleRev, 1), Updated: rec.Time,
			Project: rec.Snapshot.Workspace.Project, Labels: rec.Snapshot.Labels, Proof: proof}
		for i := range msgs {
			doc, _ := fulltext.MessageDoc(&msgs[i]) // loaded with its content
			u.Add = append(u.Add, searchdb.Message{Index: i, Rev: revs[i], Doc: doc})
			ix.digest[i+1] = ix.digest[i].Add(&doc)
		}
		u.Digest = ix.digest[len(msgs)]
		out = ix
		return nil
	})
	return out, err
}

// readAfter is readIndexed's way for a row in state st: from the records
// after st.Rev alone. It returns nil when they do not merely add
// messages to the row's (or are not all in the log).
func (s *Store) readAfter(id session.SessionID, v *view, last *record.Rec, rec *sessionstore.Record, st *searchdb.State, proof searchdb.Proof) *indexed {
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
		prev, err := v.back.Before(r)
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
		val, changed, err := record.MemberChange(r.Kind, r.Payload, titleKey)
		if err != nil {
			return nil
		}
		if changed {
			var t string
			if val != nil && json.Unmarshal(val, &t) != nil {
				return nil
			}
			if t != title {
				title, titleRev = t, r.Rev
			}
		}
	}
	revs, ok := fulltext.Appearances(st.Rev, counts, st.Messages)
	if !ok || len(revs) != len(msgs)-st.Messages {
		return nil
	}
	ix := &indexed{digest: make([]fulltext.Digest, len(msgs)+1)}
	docs := make([]fulltext.Doc, len(msgs))
	for i := range msgs {
		docs[i], _ = fulltext.MessageDoc(&msgs[i]) // loaded with its content
		ix.digest[i+1] = ix.digest[i].Add(&docs[i])
	}
	if ix.digest[st.Messages] != st.Digest {
		return nil // not the conversation the row holds
	}
	u := &ix.update
	*u = searchdb.Update{ID: id, FromRev: st.Rev, FromMessages: st.Messages, Rev: rec.Revision, Messages: len(msgs),
		Digest: ix.digest[len(msgs)], Title: rec.Snapshot.Title, TitleRev: max(titleRev, 1), Updated: rec.Time,
		Project: rec.Snapshot.Workspace.Project, Labels: rec.Snapshot.Labels, Proof: proof}
	for i := st.Messages; i < len(msgs); i++ {
		u.Add = append(u.Add, searchdb.Message{Index: i, Rev: revs[i-st.Messages], Doc: docs[i]})
	}
	return ix
}

// maxReadAfter bounds how many records readAfter reads back before it
// leaves the work to a read of the whole history.
const maxReadAfter = 4096

var titleKey = `"title"`

// errShortHistory reports a history that ends before the revision read
// as the latest (damage a read of the latest alone does not see).
var errShortHistory = errors.New("jsonlstore: the history ends before its latest revision")

// historyCounts reads session id's history up to revision last and
// returns each revision's message count and the revision its title (as
// at last) was set at.
func (s *Store) historyCounts(id session.SessionID, v *view, last uint64) ([]fulltext.Count, uint64, error) {
	h := s.scanHistory(id, v)
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
