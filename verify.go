package sessionstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Verifier is a Store that checks its own records more thoroughly than
// reading them back does (file framing, archives, summaries, the content
// records reference). Verify and VerifyWith use it when the store has it.
type Verifier interface {
	Store
	// VerifyWith checks every record of the given sessions (all sessions,
	// in ID order, when none is given) as opts say, and reports what it
	// found, session by session. Corruption goes into the report; the
	// error is for what kept it from checking (a done context, a closed
	// store, an unknown or invalid ID, I/O). It takes no lease, modifies
	// nothing, and is safe on a live store.
	VerifyWith(ctx context.Context, opts VerifyOptions, ids ...session.SessionID) (VerifyReport, error)
}

// VerifyReport is what a verification found, session by session.
type VerifyReport struct {
	Sessions []SessionVerifyReport `json:"sessions"`
	// Unreadable lists the sessions that could not be checked (a file
	// this user may not read, an I/O error), with the reason; each counts
	// as a problem.
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
}

// OK reports whether every verified session is sound and every session
// could be checked.
func (r *VerifyReport) OK() bool { return r.ProblemCount() == 0 }

// ProblemCount is the number of problems over all sessions, each
// unreadable session counted as one.
func (r *VerifyReport) ProblemCount() int {
	n := len(r.Unreadable)
	for i := range r.Sessions {
		n += len(r.Sessions[i].Problems)
	}
	return n
}

// NewerCount is the number of sessions written (in part) by a newer
// version, which this program could not check whole.
func (r *VerifyReport) NewerCount() int {
	n := 0
	for i := range r.Sessions {
		if r.Sessions[i].Newer != nil {
			n++
		}
	}
	return n
}

// SessionVerifyReport is what a verification found in one session.
type SessionVerifyReport struct {
	ID session.SessionID `json:"id"`
	// Records is the number of records checked and found sound, and
	// Revision the latest of them (0 when none is).
	Records  int    `json:"records"`
	Revision uint64 `json:"revision"`
	// Problems are corruption: a record that fails its checks, a payload
	// that does not decode or restore, a summary that disagrees with the
	// records. Any problem makes the session unsound.
	Problems []Finding `json:"problems,omitempty"`
	// Newer is where records written by a newer version begin: a record
	// format version or kind this program does not know. It is not
	// corruption: the records before it were checked, it and those after
	// it were not, and this program does not write to the session.
	Newer *Finding `json:"newer,omitempty"`
	// Notes are worth knowing but are no failure (an uncommitted tail the
	// next holder removes, snapshots of a newer schema, revisions a repair
	// set aside, …).
	Notes []Finding `json:"notes,omitempty"`
}

// OK reports whether the session is sound.
func (r *SessionVerifyReport) OK() bool { return len(r.Problems) == 0 }

// Finding is one problem or note, at a place in a file (or table).
type Finding struct {
	// File is relative to the store root ("ID/log.jsonl"), or the table
	// of a database store.
	File string `json:"file"`
	// Offset is the byte offset in File the finding is about (0 for a
	// finding about a whole file, or in a database).
	Offset int64 `json:"offset"`
	// Revision is the revision the finding concerns, 0 when unknown.
	Revision uint64 `json:"revision,omitempty"`
	Message  string `json:"message"`
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s offset %d", f.File, f.Offset)
	if f.Revision > 0 {
		s += fmt.Sprintf(" (revision %d)", f.Revision)
	}
	return s + ": " + f.Message
}

// FindingOf is the finding a *CorruptionError reports.
func FindingOf(ce *CorruptionError) Finding {
	msg := "corrupt"
	if ce.Err != nil {
		msg = ce.Err.Error()
	}
	return Finding{File: ce.Path, Offset: ce.Offset, Revision: ce.Revision, Message: msg}
}

// VerifyOptions tune a verification. The zero value checks what an
// adapter checks by default.
type VerifyOptions struct {
	// Deep decodes and restores every revision's snapshot, and checks what
	// each references, rather than what an adapter checks by default (for
	// the file store: every record's checksums and every delta, but only
	// full records' and the latest snapshot decoded): its cost is the sum
	// of the snapshots' sizes, not the log's. An adapter that always
	// checks that much ignores it.
	Deep bool
}

// VerifyWith checks the given sessions of s (all of them when none is
// given) as opts say: with s's own VerifyWith when s is a Verifier, else
// by reading each session's History, every record of which must read back
// and restore to a Session (revisions a repair set aside are skipped; a
// newer program's records end the check, as Newer), whatever opts say.
// Errors as Verifier's.
func VerifyWith(ctx context.Context, s Store, opts VerifyOptions, ids ...session.SessionID) (VerifyReport, error) {
	if v, ok := s.(Verifier); ok {
		return v.VerifyWith(ctx, opts, ids...)
	}
	var rep VerifyReport
	ids, err := idsOrAll(ctx, s, ids)
	if err != nil {
		return rep, err
	}
	for _, id := range ids {
		sr := SessionVerifyReport{ID: id}
		var err error
		for rec, herr := range s.History(ctx, id) {
			if errors.Is(herr, ErrRevisionsMissing) {
				continue // set aside by a repair: the revisions after them read
			}
			if err = herr; err != nil {
				break
			}
			if _, err = rec.Session(); err != nil {
				err = &CorruptionError{ID: id, Revision: rec.Revision, Err: fmt.Errorf("snapshot does not restore: %w", err)}
				break
			}
			sr.Records, sr.Revision = sr.Records+1, rec.Revision
		}
		var ce *CorruptionError
		var ne *NewerRecordError
		switch {
		case errors.As(err, &ce):
			sr.Problems = append(sr.Problems, FindingOf(ce))
		case errors.As(err, &ne):
			sr.Newer = &Finding{File: ne.Path, Offset: ne.Offset, Revision: ne.Revision, Message: ne.Error()}
		case err != nil:
			return rep, err
		}
		rep.Sessions = append(rep.Sessions, sr)
	}
	return rep, nil
}

// Verify is VerifyWith with the zero VerifyOptions: what an adapter checks
// by default.
func Verify(ctx context.Context, s Store, ids ...session.SessionID) (VerifyReport, error) {
	return VerifyWith(ctx, s, VerifyOptions{}, ids...)
}
