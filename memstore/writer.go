package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

type writerState int

const (
	writerActive   writerState = iota
	writerReleased             // Release or Delete: ErrClosed
	writerLost                 // superseded: ErrLeaseLost
)

// writer is the holder of one session's lease. Its mutable state is
// guarded by the store's mutex; its append state by amu, which serializes
// its appends.
type writer struct {
	s      *Store
	e      *entry
	gen    uint64
	report sessionstore.RecoveryReport

	state writerState // guarded by s.mu
	rev   uint64      // guarded by s.mu

	amu sync.Mutex
	// app is the writer's memory of the revision it stored last, so that
	// an append costs what changed (internal/appender); nil until the
	// first append of a writer that acquired the session, which resumes it
	// from the stored chain.
	app      *appender.Appender
	arrivals blob.Arrivals    // the references checked (Append's contract)
	red      *redact.Redactor // what the writer's appends redact with
	// latest is a copy of the messages Latest returned, for app once it
	// resumes (resume.go).
	latest sessnap.Messages
}

var _ sessionstore.Writer = (*writer)(nil)

func (w *writer) ID() session.SessionID                 { return w.e.id }
func (w *writer) Generation() uint64                    { return w.gen }
func (w *writer) Recovery() sessionstore.RecoveryReport { return w.report }

func (w *writer) Revision() uint64 {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.rev
}

// usableLocked reports why the writer may not act, if it may not.
func (w *writer) usableLocked() error {
	switch {
	case w.s.closed:
		return fmt.Errorf("%w: session %s: store closed", sessionstore.ErrClosed, w.e.id)
	case w.state == writerReleased:
		return fmt.Errorf("%w: session %s: writer released", sessionstore.ErrClosed, w.e.id)
	case w.state == writerLost:
		return fmt.Errorf("%w: session %s: generation %d was superseded", sessionstore.ErrLeaseLost, w.e.id, w.gen)
	}
	return nil
}

// usableDo runs fn under the store's lock, if w is usable and ctx is not
// done: the check and fn are one step, so that nothing changes w's state
// between them.
func (w *writer) usableDo(ctx context.Context, fn func()) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fn()
	return nil
}

func (w *writer) usable(ctx context.Context) error {
	w.s.mu.Lock()
	err := w.usableLocked()
	w.s.mu.Unlock()
	if err != nil {
		return err
	}
	return ctx.Err()
}

// Append implements sessionstore.Writer. The record is built outside the
// store's lock (the slow part: validating and encoding what changed), from
// the revision this writer stored last, and stored under it with the
// content it adds.
func (w *writer) Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error) {
	if err := w.usable(ctx); err != nil {
		return 0, err
	}
	w.amu.Lock()
	defer w.amu.Unlock()
	s, e := w.s, w.e
	s.mu.Lock()
	m, resume, err := w.checkLocked(expected, snap)
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if w.app == nil {
		w.app = appender.New(nil, s.opts.MaxRecordBytes, false)
		w.app.Redact = redact.NewStream(w.red)
		// The stored chain is the latest revision as pieces; a chain that
		// does not resume leaves the next record full.
		full, deltas := &resume[0], make([]*record.Rec, len(resume)-1)
		for i := range deltas {
			deltas[i] = &resume[i+1]
		}
		_ = w.app.Resume(full, deltas)
		w.holdLatest(w.app)
	}
	rec, added, err := s.line(w.app, e.id, func(hash string) ([]byte, bool) { return s.get(e, hash) }, m, &snap)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		w.app = nil // the line is not stored: what the appender remembers is not the store's
		return 0, err
	}
	// Still the latest: only this holder appends, one append at a time.
	s.appendLocked(e, rec, &snap, added)
	w.rev = rec.Rev
	return w.rev, nil
}

// checkLocked checks that snap may be appended as revision expected+1 and
// returns its record's envelope, and, for a writer whose append state is
// yet to be resumed, the stored chain of the latest revision.
func (w *writer) checkLocked(expected uint64, snap sessnap.Snapshot) (record.Meta, []record.Rec, error) {
	if err := w.usableLocked(); err != nil {
		return record.Meta{}, nil, err
	}
	e := w.e
	m, err := record.Next(e.id, e.records[len(e.records)-1].Meta, expected, w.gen, w.s.opts.Now())
	if err != nil {
		return record.Meta{}, nil, err
	}
	if err := w.arrivals.Check(e.id, snap.Messages, sizes(e.getLocked)); err != nil {
		return record.Meta{}, nil, err
	}
	var resume []record.Rec
	if w.app == nil {
		resume = chain(e.records)
	}
	return m, resume, nil
}

func (w *writer) Heartbeat(ctx context.Context) error {
	return w.usableDo(ctx, func() { w.e.identity.HeartbeatAt = w.s.now() })
}

func (w *writer) Delete(ctx context.Context) error {
	return w.usableDo(ctx, func() {
		delete(w.s.sessions, w.e.id)
		w.state = writerReleased
		// Waiting Acquires wake, look the ID up again and find it gone (or
		// created anew).
		w.e.freeLocked(summary.LeaseFree)
		w.s.index.Delete(w.e.id)
		w.s.search.deleted(w.e.id)
	})
}

// Release implements sessionstore.Writer. Releasing a writer that was
// already released, deleted or superseded does nothing and returns nil (a
// superseded writer has no lease left to give up); after the store is
// closed it returns ErrClosed. ctx is not consulted: giving a lease up
// never waits.
func (w *writer) Release(context.Context) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.state != writerActive {
		return nil
	}
	w.state = writerReleased
	if w.s.closed {
		return fmt.Errorf("%w: session %s: store closed", sessionstore.ErrClosed, w.e.id)
	}
	w.e.freeLocked(summary.LeaseFree)
	w.s.leaseChangedLocked(w.e)
	return nil
}
