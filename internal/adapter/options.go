package adapter

import (
	"context"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// Defaults gives the options every adapter has their defaults, in
// place: the record cap (record.Cap), the blob threshold
// (blob.Threshold), the clock (time.Now) and the redactor
// (redact.Default()).
func Defaults(maxRecordBytes, blobThreshold *int, now *func() time.Time, redactor **redact.Redactor) {
	*maxRecordBytes = record.Cap(*maxRecordBytes)
	*blobThreshold = blob.Threshold(*blobThreshold)
	if *now == nil {
		*now = time.Now
	}
	if *redactor == nil {
		*redactor = redact.Default()
	}
}

// Ready is the check a store's call begins with: sessionstore.ErrClosed
// when the store is closed, else ctx's error.
func Ready(ctx context.Context, closed bool) error {
	if closed {
		return sessionstore.ErrClosed
	}
	return ctx.Err()
}

// ReadyIDs is the check a call about sessions ids begins with, once the
// store's own readiness (Ready) gave ready: ready's error first, then
// the first invalid ID's (sessionstore.ValidateIDs).
func ReadyIDs(ready error, ids []session.SessionID) error {
	if ready != nil {
		return ready
	}
	return sessionstore.ValidateIDs(ids...)
}

// ReadyID is Ready for a call about session id, which it validates
// first.
func ReadyID(ctx context.Context, id session.SessionID, closed bool) error {
	if err := sessionstore.ValidateID(id); err != nil {
		return err
	}
	return Ready(ctx, closed)
}
