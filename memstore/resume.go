package memstore

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Latest implements sessionstore.Writer: the revision the writer holds,
// decoded from the stored chain. The writer keeps a copy of its messages,
// so that an append of them and new ones is a delta of the new ones.
func (w *writer) Latest(ctx context.Context) (sessionstore.Record, error) {
	w.amu.Lock()
	defer w.amu.Unlock()
	if err := w.usable(ctx); err != nil {
		return sessionstore.Record{}, err
	}
	rec, err := w.s.LoadWith(ctx, w.e.id, sessionstore.LoadOptions{Revision: w.Revision()})
	if err != nil {
		return sessionstore.Record{}, err
	}
	if w.app == nil || !w.app.Held() {
		w.latest = appender.Copy(rec.Snapshot.Messages) // the caller may change the record's
		if w.app != nil {
			w.holdLatest(w.app)
		}
	}
	return rec, nil
}

// holdLatest gives app, resumed from the stored chain, the messages of
// the revision Latest returned, or else a way to decode them when the
// first append needs them (without their content: the appender
// recognises content by its size and SHA-256).
func (w *writer) holdLatest(app *appender.Appender) {
	if w.latest != nil {
		app.Hold(w.latest)
		w.latest = nil
		return
	}
	rev := w.Revision()
	app.Stored = func() (sessnap.Messages, error) {
		rec, err := w.s.LoadWith(context.Background(), w.e.id, sessionstore.LoadOptions{Revision: rev, WithoutContent: true})
		return rec.Snapshot.Messages, err
	}
}
