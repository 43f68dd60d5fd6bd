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
	// Where is the kind of file that holds it: WhereLog, WhereArchive,
	// WhereRetired (a retired session's pack) or WhereForensic (a copy
	// a repair set aside: File names it, and the revision, message and
	// part are unknown); "" when the store does not say.
	Where string `json:"where,omitempty"`
	// File is the forensic copy's name in the session's directory.
	File string `json:"file,omitempty"`
}

// Where a SecretFinding is (SecretFinding.Where).
const (
	WhereLog      = "log"
	WhereArchive  = "archive"
	WhereRetired  = "retired"
	WhereForensic = "forensic"
)

// SecretScanner is a store that scans what it holds itself (every kind
// of file, retired sessions included) faster than Scan's reading through
// RecordLines would: Scan hands the work to it.
type SecretScanner interface {
	ScanSecrets(ctx context.Context, r *redact.Redactor, ids ...session.SessionID) iter.Seq2[SecretFinding, error]
}

// Scan reports the secrets r finds in the stored sessions ids (every
// session, in ID order, when none is given): in every revision, archived
// ones included, and in the content kept out of line, which History gives
// back in place. A secret is reported once per place (message, part and
// field), at the first revision that holds it. It takes no lease and
// modifies nothing. An error (an unknown or unreadable session, a done
// context) is yielded and ends the scan.
//
// A SecretScanner scans itself (jsonlstore: its logs, archives, blobs,
// retired packs and forensic copies). Otherwise a store that gives its
// records as stored (pgstore: RecordLines) is scanned in the bytes it
// holds: each record line once, and each piece of content kept out of
// line once (ReadBlob), so that a session costs a read of what it
// stores; only the revisions whose bytes
// hold a secret are decoded (LoadRevision), to say where it is. Another
// store is scanned through History, each revision's messages that are the
// previous revision's, unchanged, not scanned again.
func Scan(ctx context.Context, s Store, r *redact.Redactor, ids ...session.SessionID) iter.Seq2[SecretFinding, error] {
	if sc, ok := s.(SecretScanner); ok {
		return sc.ScanSecrets(ctx, r, ids...)
	}
	return func(yield func(SecretFinding, error) bool) {
		if len(ids) == 0 {
			var err error
			if ids, err = s.IDs(ctx); err != nil {
				yield(SecretFinding{}, err)
				return
			}
		}
		for _, id := range ids {
			if l, ok := s.(recordLiner); ok {
				if !scanLines(ctx, s, l, r, id, yield) {
					return
				}
				continue
			}
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

// recordLiner is a store that yields a session's record lines as stored
// (jsonlstore.Store, pgstore.Store).
type recordLiner interface {
	RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error]
}

// scanLines scans session id through its record lines and its content
// kept out of line, and decodes the revisions where a secret is.
func scanLines(ctx context.Context, s Store, l recordLiner, r *redact.Redactor, id session.SessionID, yield func(SecretFinding, error) bool) bool {
	var marked []uint64 // revisions whose line or new content holds a secret, in order
	refs := map[string]bool{}
	for line, err := range l.RecordLines(ctx, id) {
		if err != nil {
			yield(SecretFinding{}, err)
			return false
		}
		rev := lineRevision(line)
		hit := len(r.Find(string(line))) > 0
		for _, ref := range lineRefs(line) {
			if refs[ref.SHA256] {
				continue
			}
			refs[ref.SHA256] = true
			content, err := s.ReadBlob(ctx, id, ref)
			if err != nil {
				yield(SecretFinding{}, err)
				return false
			}
			hit = hit || len(r.Find(string(content))) > 0
		}
		if hit && rev > 0 {
			marked = append(marked, rev)
		}
	}
	seen := map[findingKey]bool{}
	for _, rev := range marked {
		rec, err := s.LoadRevision(ctx, id, rev)
		if err != nil {
			yield(SecretFinding{}, err)
			return false
		}
		found := [][]redact.Located{r.FindHead(rec.Snapshot)}
		for _, m := range rec.Snapshot.Messages {
			found = append(found, r.FindMessage(m))
		}
		for i, fs := range found {
			for _, f := range fs {
				k := findingKey{i - 1, f.Part, f.Field, f.Rule, f.Hash}
				if seen[k] {
					continue
				}
				seen[k] = true
				if !yield(SecretFinding{ID: id, Revision: rev, Message: i - 1, Part: f.Part, Field: f.Field, Rule: f.Rule, Hash: f.Hash}, nil) {
					return false
				}
			}
		}
	}
	return true
}

// lineRevision returns the revision a record line names ("rev":N, near
// its start in the record format), 0 when it names none.
func lineRevision(line []byte) uint64 {
	i := bytes.Index(line[:min(len(line), 64)], []byte(`"rev":`))
	if i < 0 {
		return 0
	}
	var rev uint64
	for _, c := range line[i+len(`"rev":`):] {
		if c < '0' || c > '9' {
			break
		}
		rev = rev*10 + uint64(c-'0')
	}
	return rev
}

// lineRefs returns the content a record line references out of line
// (blobs and pages: "sha256":"<64 hex>", then "size":N), each with its
// size.
func lineRefs(line []byte) []session.ContentRef {
	var out []session.ContentRef
	key := []byte(`"sha256":"`)
	for {
		i := bytes.Index(line, key)
		if i < 0 || i+len(key)+65 > len(line) {
			return out
		}
		line = line[i+len(key):]
		hash := string(line[:64])
		rest := line[65:min(len(line), 65+48)]
		j := bytes.Index(rest, []byte(`"size":`))
		if j < 0 || line[64] != '"' {
			continue
		}
		var size int64
		for _, c := range rest[j+len(`"size":`):] {
			if c < '0' || c > '9' {
				break
			}
			size = size*10 + int64(c-'0')
		}
		out = append(out, session.ContentRef{SHA256: hash, Size: size})
	}
}
