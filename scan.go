package sessionstore

import (
	"bytes"
	"context"
	"iter"

	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// SecretFinding is one secret Scan found in a stored session. It says
// where, never what: the secret itself is not in it.
type SecretFinding struct {
	ID session.SessionID `json:"id"`
	// Revision is the first revision that holds the secret at this place;
	// the later revisions that keep the message hold it too.
	Revision uint64 `json:"revision"`
	// Message is the message's index in the conversation, -1 for the
	// snapshot's fields outside it (its title, last error, pending
	// approval).
	Message int `json:"message"`
	// Part is the part's index ("2", "2.0" for a nested part; "" for the
	// message's error and the snapshot's fields), Field the field that
	// holds the secret (redact.Located).
	Part  string `json:"part,omitempty"`
	Field string `json:"field"`
	// Rule and Hash are what the secret's placeholder would show.
	Rule string `json:"rule"`
	Hash string `json:"hash"`
}

// Scan reports the secrets r finds in the stored sessions ids (every
// session, in ID order, when none is given): in every revision, archived
// ones included, and in the content kept out of line, which History gives
// back in place. A secret is reported once per place (message, part and
// field), at the first revision that holds it. It takes no lease and
// modifies nothing. An error (an unknown or unreadable session, a done
// context) is yielded and ends the scan.
//
// Each revision's messages that are the previous revision's, unchanged,
// are not scanned again, so that a session costs the scan of its distinct
// content, not of every revision whole.
func Scan(ctx context.Context, s Store, r *redact.Redactor, ids ...session.SessionID) iter.Seq2[SecretFinding, error] {
	return func(yield func(SecretFinding, error) bool) {
		if len(ids) == 0 {
			var err error
			if ids, err = IDs(ctx, s); err != nil {
				yield(SecretFinding{}, err)
				return
			}
		}
		for _, id := range ids {
			if !scanSession(ctx, s, r, id, yield) {
				return
			}
		}
	}
}

type findingKey struct {
	msg         int
	part, field string
	rule, hash  string
}

func scanSession(ctx context.Context, s Store, r *redact.Redactor, id session.SessionID, yield func(SecretFinding, error) bool) bool {
	seen := map[findingKey]bool{}
	var prev []session.Message
	emit := func(rev uint64, msg int, found []redact.Located) bool {
		for _, f := range found {
			k := findingKey{msg, f.Part, f.Field, f.Rule, f.Hash}
			if seen[k] {
				continue
			}
			seen[k] = true
			if !yield(SecretFinding{ID: id, Revision: rev, Message: msg, Part: f.Part, Field: f.Field, Rule: f.Rule, Hash: f.Hash}, nil) {
				return false
			}
		}
		return true
	}
	for rec, err := range s.History(ctx, id) {
		if err != nil {
			yield(SecretFinding{}, err)
			return false
		}
		if !emit(rec.Revision, -1, r.FindHead(rec.Snapshot)) {
			return false
		}
		msgs := rec.Snapshot.Messages
		for i := range msgs {
			if i < len(prev) && sameContent(&prev[i], &msgs[i]) {
				continue
			}
			if !emit(rec.Revision, i, r.FindMessage(msgs[i])) {
				return false
			}
		}
		prev = msgs
	}
	return true
}

// sameContent reports whether a and b hold the same content in every
// field a Redactor scans.
func sameContent(a, b *session.Message) bool {
	return a.Error == b.Error && sameParts(a.Parts, b.Parts)
}

func sameParts(a, b []session.Part) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		p, q := &a[i], &b[i]
		if p.Text != q.Text || p.Output != q.Output || p.URL != q.URL || !bytes.Equal(p.Input, q.Input) ||
			!bytes.Equal(p.Result, q.Result) || !bytes.Equal(p.Data, q.Data) || !sameParts(p.Content, q.Content) {
			return false
		}
	}
	return true
}
