package adapter

import (
	"context"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// EncodeSnapshot validates snap for session id and encodes it. It is the
// one check every adapter runs before writing: the snapshot's ID must be
// id, the snapshot must restore (so every stored revision can be read
// back as a Session), it must encode exactly (sessnap.Marshal), and the
// encoding must fit maxBytes (0: sessionstore.DefaultMaxRecordBytes).
// Errors wrap sessionstore.ErrInvalidSnapshot or sessionstore.ErrTooLarge.
func EncodeSnapshot(id session.SessionID, snap sessnap.Snapshot, maxBytes int) ([]byte, error) {
	maxBytes = record.Cap(maxBytes)
	if err := CheckID(id, snap); err != nil {
		return nil, err
	}
	if _, err := snap.Restore(); err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", sessionstore.ErrInvalidSnapshot, id, err)
	}
	if snap.Format == "" {
		snap.Format = sessnap.Format
	}
	b, err := sessnap.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("%w: session %s: %w", sessionstore.ErrInvalidSnapshot, id, err)
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("%w: session %s: snapshot is %d bytes, cap %d", sessionstore.ErrTooLarge, id, len(b), maxBytes)
	}
	return b, nil
}

// CheckID reports, wrapping sessionstore.ErrInvalidSnapshot, a snapshot
// of another session than id: the first check of every write.
func CheckID(id session.SessionID, snap sessnap.Snapshot) error {
	if snap.ID != id {
		return fmt.Errorf("%w: snapshot id %q in session %s", sessionstore.ErrInvalidSnapshot, snap.ID, id)
	}
	return nil
}

// ForkID is what a Fork of from into newID begins with: from must be
// valid, an empty newID is a new one (sessionstore.NewID), and then the
// store's readiness for the new ID (readyID: closed, ctx, the ID's
// validity) decides. It returns the fork's ID.
func ForkID(ctx context.Context, from, newID session.SessionID, readyID func(context.Context, session.SessionID) error) (session.SessionID, error) {
	if err := sessionstore.ValidateID(from); err != nil {
		return "", err
	}
	if newID == "" {
		newID = sessionstore.NewID()
	}
	if err := readyID(ctx, newID); err != nil {
		return "", err
	}
	return newID, nil
}

// ForkSnapshot returns the revision-1 snapshot of a fork of src into
// newID: a copy with the ID replaced, the relationship naming src as
// parent and src's root (or src) as root, and no origin (a fork is not the
// import of its parent's source, so a re-import never continues it).
func ForkSnapshot(src sessnap.Snapshot, newID session.SessionID) sessnap.Snapshot {
	fork := src
	fork.Origin = nil
	root := src.Relationship.RootID
	if root == "" {
		root = src.ID
	}
	fork.ID = newID
	fork.Relationship = session.SessionRelationship{ParentID: src.ID, RootID: root, Role: src.Relationship.Role}
	return fork
}
