package memstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Acquire implements sessionstore.Store: it waits while another writer
// holds the lease, until ctx is done or the store is closed.
func (s *Store) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, true)
}

// TryAcquire implements sessionstore.Store.
func (s *Store) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return s.acquire(ctx, id, opts, false)
}

func (s *Store) acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, wait bool) (sessionstore.Writer, error) {
	if err := sessionstore.ValidateID(id); err != nil {
		return nil, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, opErr("acquire", id, err)
		}
		s.mu.Lock()
		e, err := s.lookupLocked(id)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if e.holder == nil {
			w := s.takeLocked(e, opts)
			s.leaseChangedLocked(e)
			s.mu.Unlock()
			return w, nil
		}
		if !wait {
			st := e.statusLocked(s.now())
			s.mu.Unlock()
			return nil, &sessionstore.LeaseHeldError{ID: id, Status: st}
		}
		freed := e.freed
		s.mu.Unlock()

		// Woken by a release, a supersede, a deletion (the next lookup
		// reports it) or Close (likewise); then try again.
		select {
		case <-freed:
		case <-s.done:
		case <-ctx.Done():
		}
	}
}

// takeLocked makes a new writer the holder of e's free lease.
func (s *Store) takeLocked(e *entry, opts sessionstore.AcquireOptions) *writer {
	prev := summary.LeaseStatus{State: e.prev, Generation: e.lastGen}
	if e.lastGen > 0 {
		h := e.identity
		prev.Holder = &h
	}
	// lastGen is at least every generation in the records (each was
	// written by a holder it counted), so the new one exceeds them all.
	e.lastGen++
	now := s.now()
	e.identity = summary.Holder{Host: s.host, PID: s.pid, Label: opts.Label, AcquiredAt: now, HeartbeatAt: now}
	w := &writer{
		s:   s,
		e:   e,
		gen: e.lastGen,
		rev: uint64(len(e.records)),
		red: cmp.Or(opts.Redactor, s.opts.Redactor),
		report: sessionstore.RecoveryReport{
			Generation: e.lastGen,
			Previous:   prev,
		},
	}
	e.holder = w
	return w
}

// freeLocked gives up e's lease, recording how it ended (LeaseFree or
// LeaseStale), and wakes waiting Acquires.
func (e *entry) freeLocked(how summary.LeaseState) {
	e.holder = nil
	e.prev = how
	close(e.freed)
	e.freed = make(chan struct{})
}

func (e *entry) statusLocked(now time.Time) summary.LeaseStatus {
	st := summary.LeaseStatus{State: e.prev, Generation: e.lastGen}
	if e.lastGen > 0 {
		h := e.identity
		st.Holder = &h
	}
	if e.holder != nil {
		st.State = summary.LeaseHeld
		st.HeartbeatAge = max(0, now.Sub(e.identity.HeartbeatAt))
	}
	return st
}

// Lease implements sessionstore.Store.
func (s *Store) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	if err := sessionstore.ValidateID(id); err != nil {
		return summary.LeaseStatus{}, err
	}
	if err := s.ready(ctx); err != nil {
		return summary.LeaseStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return summary.LeaseStatus{}, err
	}
	return e.statusLocked(s.now()), nil
}

// Supersede makes the current holder of id lose its lease, as if it had
// died and another process had taken the lease over: it is the in-memory
// analogue of a holder whose lock file was replaced or whose lease
// expired. The old writer's later Append and Heartbeat return
// sessionstore.ErrLeaseLost and write nothing; the lease is left free but
// stale, so the next Acquire reports summary.LeaseStale as the previous
// state. Tests (the storetest suite among them) use it to simulate a lost
// lease. Errors: ErrNotHeld when nobody holds the lease, and those of
// Lease.
func (s *Store) Supersede(ctx context.Context, id session.SessionID) error {
	if err := sessionstore.ValidateID(id); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return err
	}
	if e.holder == nil {
		return fmt.Errorf("%w: session %s", ErrNotHeld, id)
	}
	e.holder.state = writerLost
	e.freeLocked(summary.LeaseStale)
	s.leaseChangedLocked(e)
	return nil
}
