package logfile

import (
	"context"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Gate is what stops any read of a session before it starts, as the
// facade (package jsonlstore) decides it: sessionstore.ErrClosed, the
// context's error, an invalid ID. The rooms that read sessions for the
// facade (verify, repair, usage) are given one.
type Gate func(ctx context.Context, id session.SessionID) error

// Read runs fn on fresh views of session id's log in root (Read), once g
// lets the read start.
func (g Gate) Read(ctx context.Context, root *layout.Root, id session.SessionID, fn func(v *View) error) error {
	if err := g(ctx, id); err != nil {
		return err
	}
	return Read(ctx, root, id, fn)
}

// Exists is g, then root.Exists: the read may start and session id is
// there.
func (g Gate) Exists(ctx context.Context, root *layout.Root, id session.SessionID) error {
	if err := g(ctx, id); err != nil {
		return err
	}
	return root.Exists(id)
}
