package appender

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// A resumed writer (Resume) knows the stored revision as pieces, but not
// its messages as values: without them its first append could not tell
// which of the next snapshot's messages are new, and would encode them
// all and write a full record. Hold gives the appender the stored
// messages that reading the revision already decoded — the record a
// resume returns (sessionstore.Resume), or what recovery decoded when it
// checked the revision — so that the first append after a resume is a
// delta of the new messages, exactly as later appends are, and costs
// what changed: no message it holds is encoded again.
//
// The held messages may keep large content as references (a revision
// decoded without its content): a held part with a reference matches a
// next part with the content in its place when the content has the
// reference's size and SHA-256 (content that the stored record keeps out
// of line under that name; hashing it costs a fraction of encoding it,
// and nothing is read).

// Hold sets msgs as the stored revision's messages, element for element,
// when the appender resumed a chain (Resume) and knows no messages yet.
// msgs are the appender's own from then on: the caller never changes
// them (give it a copy, session.Message.Clone, of what the caller hands
// out). It reports whether it took them.
func (a *Appender) Hold(msgs sessnap.Messages) bool {
	if a.FullOnly || a.known || !a.track.Known() {
		return false
	}
	a.msgs, a.known = msgs, true
	// The stored messages were checked when they were written; the
	// checker learns their IDs, so that the next messages are checked
	// against them.
	a.check.Reset()
	a.check.Advance(sessnap.Snapshot{Messages: msgs})
	return true
}

// HoldCopy holds a copy of msgs (Hold) when the appender would take them:
// what a resume returns to its caller, who may change it. The one rule for
// what a writer that hands out the stored revision keeps of it.
func (a *Appender) HoldCopy(msgs sessnap.Messages) {
	if a.FullOnly || a.known || !a.track.Known() {
		return
	}
	a.Hold(Copy(msgs))
}

// Copy returns msgs cloned element by element (session.CloneMessages):
// the appender's own copy of messages a caller keeps.
func Copy(msgs sessnap.Messages) sessnap.Messages {
	return session.CloneMessages(msgs)
}

// Held reports whether the appender knows the stored revision's messages
// (after an append, or Hold).
func (a *Appender) Held() bool { return a.known && a.track.Known() }

// holdStored calls a.Stored once, when it is needed.
func (a *Appender) holdStored() {
	if a.Stored == nil || a.known || !a.track.Known() || a.FullOnly {
		return
	}
	load := a.Stored
	a.Stored = nil
	if msgs, err := load(); err == nil {
		a.Hold(msgs)
	}
}

// contentIs reports whether part q holds, in the field ref names, content
// of ref's size and SHA-256 (and no reference of its own).
func contentIs(q *session.Part, ref *session.ContentRef) bool {
	if q.Ref != nil {
		return false
	}
	var s string
	var b []byte
	switch ref.Field {
	case session.ContentText:
		s = q.Text
	case session.ContentOutput:
		s = q.Output
	case session.ContentEncrypted:
		s = q.Encrypted
	case session.ContentData:
		b = q.Data
	default:
		return false
	}
	if int64(len(s)+len(b)) != ref.Size {
		return false
	}
	h := sha256.New()
	if b != nil {
		h.Write(b)
	} else {
		h.Write([]byte(s))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])) == ref.SHA256
}

// withoutRefField clears, in a copy of p, the field a reference stands for, so
// that the other fields compare alike.
func withoutRefField(p session.Part, field string) session.Part {
	switch field {
	case session.ContentText:
		p.Text = ""
	case session.ContentOutput:
		p.Output = ""
	case session.ContentEncrypted:
		p.Encrypted = ""
	case session.ContentData:
		p.Data = nil
	}
	p.Ref = nil
	return p
}

// Snapshot writes out the stored revision's snapshot as the appender
// knows it (its pages as references, content as references): what a
// writer that resumed a chain decodes its revision from without reading
// the chain again. Nil when it knows none.
func (a *Appender) Snapshot() []byte { return a.track.Snapshot() }
