package sessionstore

import (
	"context"
	"errors"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// AcquireWithin takes session id's lease from s within wait: at once
// (TryAcquire) when wait is 0 or less, else waiting up to wait (Acquire).
// A lease still held when wait runs out is reported as TryAcquire reports
// one, with a *LeaseHeldError that says who holds it, rather than as the
// deadline's error; the end of ctx itself stays ctx's error. Other errors
// are Acquire's.
func AcquireWithin(ctx context.Context, s Store, id session.SessionID, opts AcquireOptions, wait time.Duration) (Writer, error) {
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
