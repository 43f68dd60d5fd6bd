package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/sessionstore/sessionstore"
)

// heartbeater calls beat every interval until it is stopped, its context
// ends, or beat reports that there is nothing left to keep alive (the
// lease was lost, the writer or store closed). A failed beat of another
// kind (the database unreachable for a moment) is retried at the next
// tick: the lease lives for several intervals, so one missed beat does not
// lose it.
type heartbeater struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startHeartbeat starts the loop in a goroutine counted by wg.
func startHeartbeat(parent context.Context, interval time.Duration, beat func(context.Context) error, onExit func()) *heartbeater {
	ctx, cancel := context.WithCancel(parent)
	h := &heartbeater{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer onExit()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			err := beat(ctx)
			if errors.Is(err, sessionstore.ErrLeaseLost) || errors.Is(err, sessionstore.ErrClosed) ||
				errors.Is(err, sessionstore.ErrWriterFailed) {
				return
			}
		}
	}()
	return h
}

// stop ends the loop and waits for it. Safe to call more than once.
func (h *heartbeater) stop() {
	h.cancel()
	<-h.done
}
