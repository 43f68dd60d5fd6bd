package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/sessnap"
)

// A resume reads the session once. Acquiring reads the rows of the latest
// revision's chain (resume, lease.go) and the appender keeps the revision
// as pieces; Latest decodes it from them, reading the pages and the
// content it references in one query each, and the appender keeps a copy
// of its messages, so that an append of them and new ones is a delta of
// the new ones (internal/appender, held.go). An append without Latest
// (Acquire, then Load, then Append) decodes the revision from the pieces
// without its content when it needs the stored messages, and recognises
// content kept out of line by its size and SHA-256: it is a delta too.

// Latest implements sessionstore.Writer: the revision the writer holds,
// with its content.
func (w *writer) Latest(ctx context.Context) (sessionstore.Record, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(ctx); err != nil {
		return sessionstore.Record{}, err
	}
	var rec sessionstore.Record
	var err error
	if r := w.resumed; r != nil && !w.app.Held() && r.Through() == w.rev.Load() {
		rec, err = w.s.newBlobReader(w.id).decode(ctx, r, w.app.Snapshot(), false)
		if err != nil {
			err = wrapErr("load", w.id, err)
		}
	} else {
		rec, err = w.s.load(ctx, w.id, w.rev.Load(), false)
	}
	if err != nil {
		return sessionstore.Record{}, err
	}
	if rec.Revision != w.rev.Load() {
		return sessionstore.Record{}, fmt.Errorf("%w: session %s: latest revision %d, the writer's %d", sessionstore.ErrLeaseLost, w.id, rec.Revision, w.rev.Load())
	}
	w.app.HoldCopy(rec.Snapshot.Messages) // the caller may change the record's
	return rec, nil
}

// holdResumed lets the first append after acquiring decode the stored
// messages, without their content, from what acquiring read, in tx.
func (w *writer) holdResumed(ctx context.Context, tx pgx.Tx) {
	r := w.resumed
	if r == nil || w.app.Held() {
		w.app.Stored = nil
		return
	}
	w.app.Stored = func() (sessnap.Messages, error) {
		rec, err := w.s.blobReaderOn(tx, w.id).decode(ctx, r, w.app.Snapshot(), true)
		return rec.Snapshot.Messages, err
	}
}
