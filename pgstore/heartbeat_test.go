package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
)

// The heartbeat loop's timing, on synctest's fake clock: one beat per
// interval, none after stop, transient failures retried, a lost lease
// ending the loop.
func TestHeartbeatLoop(t *testing.T) {
	tests := []struct {
		name      string
		fail      func(n int64) error // the error of beat number n (from 1)
		wait      time.Duration
		wantBeats int64
		wantEnded bool // the loop ended by itself
	}{
		{"beats every interval", func(int64) error { return nil }, 10*time.Second + time.Millisecond, 5, false},
		{"transient failures are retried", func(n int64) error {
			if n%2 == 0 {
				return errors.New("connection refused")
			}
			return nil
		}, 10*time.Second + time.Millisecond, 5, false},
		{"lost lease ends the loop", func(n int64) error {
			if n == 3 {
				return fmt.Errorf("%w: expired", sessionstore.ErrLeaseLost)
			}
			return nil
		}, 20 * time.Second, 3, true},
		{"closed writer ends the loop", func(n int64) error {
			return sessionstore.ErrClosed
		}, 20 * time.Second, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var beats atomic.Int64
				var exited atomic.Bool
				h := startHeartbeat(t.Context(), 2*time.Second, func(context.Context) error {
					return tt.fail(beats.Add(1))
				}, func() { exited.Store(true) })
				time.Sleep(tt.wait)
				synctest.Wait()
				require.Equal(t, tt.wantBeats, beats.Load())
				require.Equal(t, tt.wantEnded, exited.Load())
				h.stop()
				require.True(t, exited.Load())
				time.Sleep(time.Minute)
				require.Equal(t, tt.wantBeats, beats.Load(), "no beat after stop")
				h.stop() // idempotent
			})
		})
	}
}

// Stopping waits for a beat in flight, and cancels its context.
func TestHeartbeatStopCancelsBeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inBeat := make(chan struct{})
		h := startHeartbeat(t.Context(), time.Second, func(ctx context.Context) error {
			close(inBeat)
			<-ctx.Done()
			return ctx.Err()
		}, func() {})
		<-inBeat
		h.stop()
	})
}
