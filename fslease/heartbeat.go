package fslease

import (
	"context"
	"errors"
	"time"
)

// heartbeatLoop calls Heartbeat every interval until Release closes l.stop,
// or until the lease is lost: a lost lease never comes back, so further
// heartbeats would only repeat the error.
func (l *Lease) heartbeatLoop(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		err := l.Heartbeat(context.Background())
		l.errMu.Lock()
		l.hbErr = err
		l.errMu.Unlock()
		if err == nil {
			continue
		}
		if l.onHBErr != nil {
			l.onHBErr(err)
		}
		if errors.Is(err, ErrLost) {
			return
		}
	}
}

// stopHeartbeat stops the heartbeat goroutine, if any, and waits for it to
// exit. It is idempotent.
func (l *Lease) stopHeartbeat() {
	l.stopOnce.Do(func() { close(l.stop) })
	if l.done != nil {
		<-l.done
	}
}

// Err returns the result of the latest background heartbeat (see
// Options.HeartbeatInterval): nil if it succeeded or none ran yet. Once the
// heartbeat goroutine sees the lease lost it stops, and Err keeps returning
// that *LostError. A failed heartbeat does not by itself mean the lease is
// lost (the lock still is held): call Check to know.
func (l *Lease) Err() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.hbErr
}
