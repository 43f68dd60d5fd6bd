package memstore

import (
	"context"
	"fmt"

	"github.com/sessionstore/sessionstore"
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
// guarded by the store's mutex, which also serializes its appends.
type writer struct {
	s      *Store
	e      *entry
	gen    uint64
	report sessionstore.RecoveryReport

	state writerState // guarded by s.mu
	rev   uint64      // guarded by s.mu
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

func (w *writer) usable(ctx context.Context) error {
	w.s.mu.Lock()
	err := w.usableLocked()
	w.s.mu.Unlock()
	if err != nil {
		return err
	}
	return ctx.Err()
}

func (w *writer) Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error) {
	if err := w.usable(ctx); err != nil {
		return 0, err
	}
	// Validate and encode outside the lock: it is the slow part, and the
	// encoded bytes are a private copy of snap.
	data, err := sessionstore.EncodeSnapshot(w.e.id, snap, w.s.opts.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	e := w.e
	latest := uint64(len(e.records))
	if expected != latest {
		return 0, fmt.Errorf("%w: session %s: expected revision %d, latest is %d", sessionstore.ErrConflict, e.id, expected, latest)
	}
	if v := e.records[latest-1].schema; v > sessnap.SchemaVersion {
		return 0, fmt.Errorf("%w: session %s: revision %d has schema %d, this program writes %d",
			sessionstore.ErrSchemaTooNew, e.id, latest, v, sessnap.SchemaVersion)
	}
	w.rev = w.s.appendLocked(e, w.gen, &snap, data)
	return w.rev, nil
}

func (w *writer) Heartbeat(ctx context.Context) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	w.e.identity.HeartbeatAt = w.s.now()
	return nil
}

func (w *writer) Delete(ctx context.Context) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	delete(w.s.sessions, w.e.id)
	w.state = writerReleased
	// Waiting Acquires wake, look the ID up again and find it gone (or
	// created anew).
	w.e.freeLocked(summary.LeaseFree)
	w.s.index.Delete(w.e.id)
	w.s.search.deleted(w.e.id)
	return nil
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
