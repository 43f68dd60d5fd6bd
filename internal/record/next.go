package record

import (
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The write-side twin of the sequence rules (seq.go): what every adapter's
// append checks against the session's latest record before it writes the
// next one, and the envelope it writes. Readers check what was written
// with Seq; writers make what they write with First and Next, so that a
// record a writer makes is one a reader accepts (After(prev).Check(m)
// holds for every m Next returns). The rules:
//
//   - The caller's view is the latest: it expected the revision the
//     session is at (else ErrConflict: a stale view, nothing written).
//   - A session whose latest record has a newer snapshot schema than this
//     program writes is not appended to (ErrSchemaTooNew): a full record
//     from this program would drop what the newer one wrote.
//   - The record is the revision after the latest, written with this
//     program's snapshot schema by the holder's generation, which is never
//     below the latest record's (else ErrLeaseLost: a later holder wrote
//     it).
//   - Its time is the clock's, never earlier than the latest record's: a
//     clock stepping back (or another machine's running behind) never
//     reorders history.
//
// The kind and format version are set by the encoder (Tracker, the
// appender), which also keeps a delta's base the record before it.

// First returns the envelope of a session's first record, written at now
// by the holder of generation gen.
func First(gen uint64, now time.Time) Meta {
	return Meta{Schema: sessnap.SchemaVersion, Rev: 1, Gen: gen, Time: now.UTC()}
}

// Next returns the envelope of the record that follows prev, the latest
// record of session id, written at now by the holder of generation gen,
// whose caller expects the session to be at revision expected. prev.Gen 0
// means the generation is not known (it is then not checked). Errors,
// when nothing may be written:
//
//   - sessionstore.ErrConflict: expected is not prev's revision;
//   - sessionstore.ErrSchemaTooNew: prev has a newer snapshot schema than
//     sessnap.SchemaVersion;
//   - sessionstore.ErrLeaseLost: prev's generation is above gen.
func Next(id session.SessionID, prev Meta, expected, gen uint64, now time.Time) (Meta, error) {
	latest := prev.Through()
	switch {
	case expected != latest:
		return Meta{}, fmt.Errorf("%w: session %s: expected revision %d, latest is %d", sessionstore.ErrConflict, id, expected, latest)
	case prev.Schema > sessnap.SchemaVersion:
		return Meta{}, fmt.Errorf("%w: session %s: revision %d has schema %d, this program writes %d",
			sessionstore.ErrSchemaTooNew, id, latest, prev.Schema, sessnap.SchemaVersion)
	case prev.Gen > gen:
		return Meta{}, fmt.Errorf("%w: session %s: revision %d was written by generation %d, after this holder's %d",
			sessionstore.ErrLeaseLost, id, latest, prev.Gen, gen)
	}
	return Meta{Schema: sessnap.SchemaVersion, Rev: latest + 1, Gen: gen, Time: Later(now.UTC(), prev.Time)}, nil
}

// Later returns t, or prev when t is before it: the time of a record
// written at t after a record of time prev.
func Later(t, prev time.Time) time.Time {
	if t.Before(prev) {
		return prev
	}
	return t
}
