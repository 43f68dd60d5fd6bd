package appender

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Appender is a writer's memory of its latest stored revision. The zero
// value knows none: the next record is full.
type Appender struct {
	track   record.Tracker
	msgs    sessnap.Messages // the stored revision's messages
	known   bool             // msgs are the tracker snapshot's messages, element for element
	check   sessnap.Checker
	hasRefs bool      // the stored snapshot holds blob references
	heads   headCache // the head encoded last (head.go)
	scratch sessnap.Snapshot

	// Ext keeps large content out of line (nil: none is).
	Ext sessnap.Externalizer
	// Pages stores the pages of full records (record.Tracker.Pages; nil:
	// full records hold every message inline).
	Pages record.PageStore
	// Max is the record cap.
	Max int
	// Redact replaces the secrets of each snapshot before anything of it
	// is encoded (nil: none are): Line is the one path by which every
	// adapter writes a snapshot, so that no adapter writes a secret the
	// rules find (package redact).
	Redact *redact.Stream
	// FullOnly makes every record a full record of the snapshot as
	// sessnap.Marshal writes it, content inline (a log the programs from
	// before delta records read).
	FullOnly bool
	// Stored, when set, gives the stored revision's messages on demand to
	// an appender that resumed a chain and was given none (Hold): the
	// first append calls it once, before it compares (held.go). An error
	// leaves the messages unknown (that append encodes them all).
	Stored func() (sessnap.Messages, error)
}

// New returns an Appender with those settings.
func New(ext sessnap.Externalizer, maxRecord int, fullOnly bool) *Appender {
	return &Appender{Ext: ext, Max: maxRecord, FullOnly: fullOnly}
}

// Resume sets a to the chain recovered from a store: its full record and
// the deltas after it, in order (their payloads retained). The next record
// can then be a delta on it once the appender knows the stored messages
// (Hold, or Stored); without them the first append encodes them all.
func (a *Appender) Resume(full *record.Rec, deltas []*record.Rec) error {
	if a.FullOnly || full == nil || full.Kind != record.KindFull {
		return nil // after a gap, or full records only: the next record is full
	}
	tr, err := ResumeChain(full, deltas, 1<<62)
	if err != nil {
		a.track = record.Tracker{Pages: a.track.Pages} // knows none: the next record is full
		return err
	}
	a.ResumeWith(full, deltas, tr)
	return nil
}

// ResumeChain returns a tracker resumed on the chain full and deltas
// (record.Tracker.ResumeWithin, maxOut the cap of each revision): what
// Resume does, for a reader that also needs the chain's snapshot
// (Tracker.Snapshot) and gives the tracker to ResumeWith after, so
// that the chain is applied once.
func ResumeChain(full *record.Rec, deltas []*record.Rec, maxOut int) (*record.Tracker, error) {
	payloads := make([][]byte, len(deltas))
	held := 0
	for i, d := range deltas {
		payloads[i] = d.Payload
		held += int(d.LineLen)
	}
	tr := &record.Tracker{}
	if err := tr.ResumeWithin(full.Payload, payloads, held, maxOut); err != nil {
		return nil, err
	}
	return tr, nil
}

// ResumeWith is Resume with tr, a tracker ResumeChain resumed on the same
// chain (the appender's own from then on).
func (a *Appender) ResumeWith(full *record.Rec, deltas []*record.Rec, tr *record.Tracker) {
	if a.FullOnly || full == nil || full.Kind != record.KindFull || tr == nil {
		return
	}
	for _, d := range deltas {
		a.hasRefs = a.hasRefs || d.Version >= record.Version4
	}
	a.hasRefs = a.hasRefs || full.Version >= record.Version4
	a.track = *tr
}

var messagesKey = []byte(`"messages"`)

// prefix returns how many of next's messages are the stored ones (all of
// them, or -1 when they are not a prefix of next or are not known).
func (a *Appender) prefix(next sessnap.Messages) int {
	if !a.known || len(next) < len(a.msgs) {
		return -1
	}
	if len(a.msgs) == 0 || &next[0] == &a.msgs[0] {
		return len(a.msgs) // the same memory: the same messages
	}
	for i := range a.msgs {
		if !sameMessage(&a.msgs[i], &next[i]) {
			return -1
		}
	}
	return len(a.msgs)
}

// head validates snap (sessnap.Checker), whose first k messages are the
// stored ones (k < 0: none), and returns its head encoded
// (sessnap.MarshalHead) and split into members (record.Members; the slice
// is the caller's to change), from the cache when the head is the one
// encoded last. Errors are the snapshot's.
func (a *Appender) head(snap *sessnap.Snapshot, k int) ([]byte, []record.Member, error) {
	// The head is compared from a.scratch, so that the snapshot's copy
	// does not escape at each append.
	a.scratch = *snap
	a.scratch.Messages = nil
	defer func() { a.scratch = sessnap.Snapshot{} }() // holds nothing of the caller's
	enc, members, hit := a.heads.lookup(&a.scratch)
	// Check's verdict follows from the head and the messages after the
	// checked ones. A cached head passed it (it is cached only then), so
	// a snapshot of that head with no message after those checked passes
	// it again and is not checked twice.
	if !hit || k != len(snap.Messages) || a.check.Known() != k {
		if err := a.check.Check(*snap); err != nil {
			return nil, nil, err
		}
	}
	if hit {
		return enc, members, nil
	}
	var err error
	enc, err = sessnap.MarshalHead(a.scratch)
	if err != nil {
		return nil, nil, err
	}
	members, err = record.Members(enc)
	if err != nil {
		return nil, nil, err
	}
	a.heads.store(&a.scratch, enc, members)
	return enc, members, nil
}

// Line returns the next record's line for *snap, as revision m (whose
// Kind and Version it sets), and remembers it as the stored revision
// (the caller writes the line, or gives the writer up). It first replaces
// the snapshot's secrets (Redact), in *snap, so that what the caller
// derives from it after (a summary, a title, the search index) is what
// was written. Errors wrap
// ErrInvalidSnapshot or ErrTooLarge; then nothing changed. An error of the
// Externalizer is returned as it is.
func (a *Appender) Line(id session.SessionID, m record.Meta, snapp *sessnap.Snapshot) ([]byte, error) {
	a.holdStored()
	a.redact(snapp)
	snap := *snapp
	if err := adapter.CheckID(id, snap); err != nil {
		return nil, err
	}
	if snap.Format == "" {
		snap.Format = sessnap.Format
	}
	if a.FullOnly {
		payload, err := adapter.EncodeSnapshot(id, snap, a.Max)
		if err != nil {
			return nil, err
		}
		m.Kind, m.Version = record.KindFull, record.VersionOf(record.KindFull)
		a.known = false
		return record.Encode(m, payload), nil
	}
	k := a.prefix(snap.Messages)
	drop := a.dropped(snap.Messages)
	if drop > 0 {
		// A rewind: the first k stored messages, the rest dropped.
		k = len(snap.Messages)
		a.check.Truncate(a.msgs, k)
	}
	line, err := a.line(id, m, &snap, k, drop)
	if errors.Is(err, record.ErrDropInPage) {
		// The cut is inside a page: the shorter conversation is encoded
		// whole (a full record, or a delta that sets it).
		line, err = a.line(id, m, &snap, -1, 0)
	}
	return line, err
}

// redact replaces the secrets of *snap (Redact), scanning the messages
// the Stream has not seen. The first append after a resume gives a new
// Stream the session again; the messages it begins with that are the
// stored ones the appender holds (prefix: every field alike) are what
// the store's records hold, redacted when they were written, and are not
// scanned again: they are not written again either (the record holds
// what follows them). The appender then holds the snapshot's own memory
// for them, so that its comparison after the redaction costs nothing per
// message.
func (a *Appender) redact(snap *sessnap.Snapshot) {
	if a.Redact.Fresh() && a.Held() && !a.FullOnly {
		if k := a.prefix(snap.Messages); k > 0 {
			a.msgs = snap.Messages[:k:k]
			a.Redact.Scanned(a.msgs)
		}
	}
	a.Redact.Snapshot(snap)
}

// dropped returns how many of the stored messages next leaves out when
// next is their first messages (a rewind), else 0. next is recognised as
// prefix() recognises a continuation: the stored messages' own memory cut
// shorter (Session.Truncate) at no cost per message, or else message by
// message (sameMessage: strings and slices that are the same memory
// compare at once), as after a resume, where the stored messages are the
// appender's copy (HoldCopy) of what the caller was handed. Nothing is
// encoded either way.
func (a *Appender) dropped(next sessnap.Messages) int {
	if !a.known || !a.track.Known() || len(next) >= len(a.msgs) {
		return 0
	}
	if len(next) > 0 && &next[0] != &a.msgs[0] {
		for i := range next {
			if !sameMessage(&a.msgs[i], &next[i]) {
				return 0
			}
		}
	}
	return len(a.msgs) - len(next)
}

// line is Line for snap, whose first k messages are the stored ones (k <
// 0: not known) and which drops the stored messages after them.
func (a *Appender) line(id session.SessionID, m record.Meta, snapp *sessnap.Snapshot, k, drop int) ([]byte, error) {
	snap := *snapp
	if k < 0 {
		a.check.Reset()
	}
	head, members, err := a.head(&snap, k)
	if err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", sessionstore.ErrInvalidSnapshot, id, err)
	}
	if len(head) > a.Max {
		return nil, fmt.Errorf("%w: session %s: the snapshot without its messages encodes to %d bytes, above the record cap %d",
			sessionstore.ErrTooLarge, id, len(head), a.Max)
	}
	grow := k >= 0 && a.track.Known()
	from := 0
	if grow {
		from = k
	}
	refs := &refCounter{ext: a.Ext}
	elems := make([][]byte, 0, len(snap.Messages)-from)
	for i, msg := range snap.Messages[from:] {
		e, err := sessnap.AppendMessage(nil, msg, refs)
		if err != nil {
			if errors.Is(err, sessnap.ErrUnencodable) {
				return nil, fmt.Errorf("%w: session %s: message %d: %w", sessionstore.ErrInvalidSnapshot, id, from+i, err)
			}
			return nil, err
		}
		if len(e) > a.Max {
			return nil, fmt.Errorf("%w: session %s: message %d encodes to %d bytes (its large content out of line), above the record cap %d",
				sessionstore.ErrTooLarge, id, from+i, len(e), a.Max)
		}
		elems = append(elems, e)
	}
	for i := range members {
		if !bytes.Equal(members[i].Key, messagesKey) {
			continue
		}
		if grow {
			members[i] = record.Member{Key: messagesKey, Grown: true, Drop: drop, Append: elems}
		} else {
			members[i].Value = append(append([]byte{'['}, bytes.Join(elems, []byte{','})...), ']')
		}
	}
	// The format version: 4 for a full record of a snapshot holding
	// references to blobs, and for a delta whose own payload holds some (a
	// reader must resolve them); else the lowest for the kind.
	hasRefs := refs.n > 0 || grow && a.hasRefs
	var v record.Versions
	if hasRefs {
		v.Full = record.Version4
	}
	if refs.n > 0 {
		v.Delta = record.Version4
	}
	a.track.Pages = a.Pages
	line, err := a.track.Next(m, members, a.Max, v)
	if errors.Is(err, record.ErrFullRecordTooLarge) {
		return nil, fmt.Errorf("%w: session %s: %w", sessionstore.ErrTooLarge, id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", sessionstore.ErrInvalidSnapshot, id, err)
	}
	a.hasRefs = hasRefs
	a.msgs, a.known = snap.Messages, true
	a.check.Advance(snap)
	return line, nil
}

// refCounter counts the references an Externalizer writes.
type refCounter struct {
	ext sessnap.Externalizer
	n   int
}

func (r *refCounter) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if r.ext == nil {
		return session.ContentRef{}, false, nil
	}
	ref, ok, err := r.ext.Externalize(field, content)
	if ok {
		r.n++
	}
	return ref, ok, err
}

// sameMessage reports whether a and b encode alike for certain: every
// field equal, compared cheaply where they share memory (strings and
// slices that are the same bytes compare at once). A false answer may be
// wrong (the caller then encodes the message), a true one never is.
func sameMessage(a, b *session.Message) bool {
	if a.ID != b.ID || a.Role != b.Role || a.ProviderPhase != b.ProviderPhase || a.CreatedAt != b.CreatedAt ||
		a.ResponseID != b.ResponseID || a.Model != b.Model || a.Injected != b.Injected || a.Error != b.Error ||
		a.Usage != b.Usage && (a.Usage == nil || b.Usage == nil || *a.Usage != *b.Usage) ||
		a.Compaction != b.Compaction && (a.Compaction == nil || b.Compaction == nil || *a.Compaction != *b.Compaction) {
		return false
	}
	return sameParts(a.Parts, b.Parts)
}

func sameParts(a, b []session.Part) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		p, q := &a[i], &b[i]
		if p.Ref != nil && q.Ref == nil {
			// A held part decoded without its content (held.go): q holds
			// that content in its place.
			if !contentIs(q, p.Ref) {
				return false
			}
			pp, qq := withoutRefField(*p, p.Ref.Field), withoutRefField(*q, p.Ref.Field)
			p, q = &pp, &qq
		}
		if p.Type != q.Type || p.Text != q.Text || p.ToolCallID != q.ToolCallID || p.Name != q.Name ||
			p.Output != q.Output || p.IsError != q.IsError || p.MediaType != q.MediaType || p.URL != q.URL ||
			p.Signature != q.Signature || p.Encrypted != q.Encrypted || p.ProviderExecuted != q.ProviderExecuted ||
			!bytes.Equal(p.Data, q.Data) || !bytes.Equal(p.Input, q.Input) || !bytes.Equal(p.Result, q.Result) ||
			p.Ref != q.Ref && (p.Ref == nil || q.Ref == nil || *p.Ref != *q.Ref) ||
			!sameParts(p.Content, q.Content) {
			return false
		}
	}
	return true
}
