package jsonlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/sessnap"
)

// A resume reads the session once. Recovery (acquire.go) reads the log's
// tail back to the start of the latest revision's chain, rebuilds the
// revision and decodes it without its content (its pages read, its blobs
// not), to check that the holder builds on a revision it can read. The
// writer keeps what it decoded, until its first use:
//
//   - Latest (sessionstore.Resume) reads the blobs its parts reference,
//     once each and in parallel, and returns it; the appender holds a
//     copy of its messages, so that an append of them and new ones is a
//     delta of the new ones (internal/appender, held.go);
//   - an Append without Latest (Acquire, then Load, then Append) gives
//     the appender the decoded messages to compare the next ones with:
//     content the revision keeps out of line is recognised by its size
//     and SHA-256, and the first append is a delta too.
//
// Either way the kept revision is dropped, and a later Latest reads the
// log as Load does.

// heldRevision is the latest revision as recovery decoded it.
type heldRevision struct {
	rec sessionstore.Record // without its content: parts keep their references
	at  *record.Rec         // its record, for errors
}

// errNotHeld: the writer no longer holds what recovery decoded.
var errNotHeld = errors.New("jsonlstore: the recovered revision is no longer held")

// holdRecovered keeps what recovery decoded for the writer's first use.
func (w *writer) holdRecovered(rc recovered) {
	if rc.held == nil || w.app == nil {
		return
	}
	w.held = &heldRevision{rec: *rc.held, at: rc.last}
	w.app.Stored = w.takeHeldMessages
}

// takeHeldMessages gives the appender the recovered revision's messages
// (called under w.mu, by Append's first record).
func (w *writer) takeHeldMessages() (sessnap.Messages, error) {
	h := w.held
	w.held = nil
	if h == nil || h.rec.Revision != w.rev {
		return nil, errNotHeld
	}
	return h.rec.Snapshot.Messages, nil
}

// Latest implements sessionstore.Writer: the revision the writer holds,
// with its content. After Acquire it is what recovery read, its blobs
// read once each, in parallel; later, the log's latest, read as Load
// reads it (nobody else appends under the lease).
func (w *writer) Latest(ctx context.Context) (sessionstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return sessionstore.Record{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return sessionstore.Record{}, err
	}
	rec, err := w.latestLocked(ctx)
	if err != nil {
		return sessionstore.Record{}, err
	}
	w.app.HoldCopy(rec.Snapshot.Messages) // the caller may change the record's
	return rec, nil
}

func (w *writer) latestLocked(ctx context.Context) (sessionstore.Record, error) {
	if h := w.held; h != nil && h.rec.Revision == w.rev {
		w.held = nil
		w.app.Stored = nil
		rec := h.rec
		c := blobfile.NewCache(w.s.fs, w.id)
		defer c.Close()
		c.PrefetchRefs(rec.Snapshot.Messages)()
		if err := logfile.ResolveShared(rec.Snapshot.Messages, c.Fetch); err != nil {
			return sessionstore.Record{}, logfile.BlobAt(h.at, err)
		}
		return rec, nil
	}
	var rec sessionstore.Record
	err := w.s.read(ctx, w.id, func(v *logfile.View) error {
		var err error
		_, rec, err = w.s.loadLatest(w.id, v, false)
		return err
	})
	if err != nil {
		return sessionstore.Record{}, err
	}
	if rec.Revision != w.rev {
		// Only the holder appends: another revision at the log's end is
		// a log replaced under the lease.
		return sessionstore.Record{}, fmt.Errorf("%w: session %s: the log's latest revision is %d, the writer's %d",
			sessionstore.ErrLeaseLost, w.id, rec.Revision, w.rev)
	}
	return rec, nil
}
