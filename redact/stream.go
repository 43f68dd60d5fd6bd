package redact

import (
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Stream redacts the successive snapshots of one session as a writer
// appends them, at a cost that follows what changed: it remembers the
// messages it was given last and what it made of them, and scans only the
// messages after those. A growing session (sessnap.Of) hands the same
// messages again in the same memory, so that they are recognised at no
// cost per message; a snapshot whose messages are not a continuation of
// the last ones is scanned whole. When no secret was ever found, the
// snapshot keeps the caller's own messages slice, which is what makes the
// appender's own recognition of the stored messages
// cost nothing per message either.
//
// A Stream is not safe for concurrent use: a writer's appends are
// serialized. The zero value, and a Stream of a nil Redactor, redact
// nothing.
type Stream struct {
	r   *Redactor
	in  sessnap.Messages // the caller's messages, last time
	out sessnap.Messages // what they were redacted to (in itself when nothing was)
}

// NewStream returns a Stream that redacts with r (nil: not at all).
func NewStream(r *Redactor) *Stream {
	if r.Off() {
		return &Stream{}
	}
	return &Stream{r: r}
}

// Redactor returns the Stream's Redactor (nil when it redacts nothing).
func (s *Stream) Redactor() *Redactor {
	if s == nil {
		return nil
	}
	return s.r
}

// Snapshot replaces the secrets of *snap in place (the snapshot value, not
// the caller's messages, which are never written to) and returns how many
// it replaced in the messages not seen before and in the head.
func (s *Stream) Snapshot(snap *sessnap.Snapshot) int {
	if s == nil || s.r == nil {
		return 0
	}
	n := s.r.head(snap)
	ms := snap.Messages
	k := s.known(ms)
	var msgs sessnap.Messages
	var m int
	if k > 0 && !sameSlice(s.in, s.out) {
		// The known messages were redacted: continue their copy. Growing
		// s.out in place keeps its first elements the same memory for the
		// appender; the elements past its length are the Stream's own.
		msgs, m = s.r.messages(ms, k, s.out[:k])
	} else {
		msgs, m = s.r.messages(ms, k, nil)
	}
	s.in, s.out = ms, msgs
	snap.Messages = msgs
	return n + m
}

// Fresh reports whether the Stream redacts and has been given no
// messages yet: the next snapshot's messages are all scanned, unless
// Scanned says some of them need not be.
func (s *Stream) Fresh() bool {
	return s != nil && s.r != nil && s.in == nil
}

// Scanned tells the Stream that msgs, the first messages of the next
// snapshot it is given (the same memory), hold no secret to replace, so
// that it scans only the messages after them. A writer that resumes a
// session says so of the stored messages its next snapshot begins with:
// they were redacted when they were written (with the rules of the writer
// that wrote them; scan and redact apply other rules to what is stored),
// and appending them again writes none of their bytes.
func (s *Stream) Scanned(msgs sessnap.Messages) {
	if s == nil || s.r == nil {
		return
	}
	s.in, s.out = msgs, msgs
}

// known returns how many of ms are the messages of the last call.
func (s *Stream) known(ms sessnap.Messages) int {
	if len(s.in) > 0 && len(ms) > 0 && len(ms) < len(s.in) && &ms[0] == &s.in[0] {
		return len(ms) // a rewind: the first messages of the last call
	}
	if len(s.in) == 0 || len(ms) < len(s.in) {
		return 0
	}
	if &ms[0] == &s.in[0] {
		return len(s.in)
	}
	for i := range s.in {
		if !sameMemory(&ms[i], &s.in[i]) {
			return 0
		}
	}
	return len(s.in)
}

func sameSlice(a, b sessnap.Messages) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameMemory reports whether a and b are the same message for certain:
// their scanned strings and parts are the same memory (a message copied
// into a new slice of a growing session). A false answer only costs a
// scan.
func sameMemory(a, b *session.Message) bool {
	return a.Error == b.Error && len(a.Parts) == len(b.Parts) &&
		(len(a.Parts) == 0 || &a.Parts[0] == &b.Parts[0])
}
