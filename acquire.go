package sessionstore

import (
	"context"
	"errors"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Acquirer is the part of a Store that AcquireWithin uses.
type Acquirer interface {
	Acquire(ctx context.Context, id session.SessionID, opts AcquireOptions) (Writer, error)
	TryAcquire(ctx context.Context, id session.SessionID, opts AcquireOptions) (Writer, error)
	Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error)
}

// AcquireWithin takes session id's lease from s within wait: at once
// (TryAcquire) when wait is 0 or less, else waiting up to wait (Acquire).
// A lease still held when wait runs out is reported as TryAcquire reports
// one, with a *LeaseHeldError that says who holds it, rather than as the
// deadline's error; the end of ctx itself stays ctx's error. Other errors
// are Acquire's.
func AcquireWithin(ctx context.Context, s Acquirer, id session.SessionID, opts AcquireOptions, wait time.Duration) (Writer, error) {
	if wait <= 0 {
		return s.TryAcquire(ctx, id, opts)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	w, err := s.Acquire(wctx, id, opts)
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return w, err
	}
	st, lerr := s.Lease(ctx, id)
	if lerr != nil {
		return nil, err
	}
	return nil, &LeaseHeldError{ID: id, Status: st}
}
