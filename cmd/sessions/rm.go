package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

const rmDoc = `
Deletes a session. It takes the session's lease first, as any writer must:
a session another process holds is refused, naming the holder, unless --wait
is given, which waits up to that long for the holder to finish. Taking the
lease recovers what a dead holder left. Deletion is atomic (the directory is
renamed away, then removed). With --retired, deletes a retired session
(see retire) instead: the only way one is ever deleted.`

func cmdRm(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("rm", rmDoc, stdout, stderr)
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	retired := c.fs.Bool("retired", false, "delete a retired session (see retire): its pack, recorded in the retired area's journal")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if *retired {
		return c.rmRetired(ctx, name)
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		w, err := sessionstore.AcquireWithin(ctx, st, id, sessionstore.AcquireOptions{Label: "sessions-rm"}, *wait)
		var he *sessionstore.LeaseHeldError
		var ce *sessionstore.CorruptionError
		switch {
		case errors.As(err, &he):
			return c.fail(heldError(he, "rm", *wait))
		case errors.Is(err, jsonlstore.ErrNoLog):
			return c.fail(noLogHint(err, id))
		case errors.As(err, &ce):
			return c.fail(fmt.Errorf("%w; 'sessions repair %s --truncate-at-corruption' frees it first", err, id))
		case err != nil:
			return c.fail(err)
		}
		if err := w.Delete(ctx); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(stdout, "removed %s\n", id)
		return exitOK
	})
}
