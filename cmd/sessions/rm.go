package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

const rmDoc = `
Deletes sessions, one after another; a session that cannot be deleted is
named with the reason, the others are still deleted, and the exit status
is 1. For each, it takes the session's lease first, as any writer must:
a session another process holds is refused, naming the holder, unless --wait
is given, which waits up to that long for the holder to finish. Taking the
lease recovers what a dead holder left. Deletion is atomic (the directory is
renamed away, then removed). With --retired, deletes retired sessions
(see retire) instead: the only way one is ever deleted.`

func cmdRm(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("rm", rmDoc, stdout, stderr)
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	retired := c.fs.Bool("retired", false, "delete a retired session (see retire): its pack, recorded in the retired area's journal")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	if len(names) == 0 {
		return c.usageError("name the sessions to delete")
	}
	if *retired {
		worst := exitOK
		for _, name := range names {
			worst = max(worst, c.rmRetired(ctx, name))
		}
		return worst
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		worst := exitOK
		for _, name := range names {
			worst = max(worst, c.rmOne(ctx, st, name, *wait))
		}
		return worst
	})
}

// rmOne deletes the session name names in st, after taking its lease.
func (c *sub) rmOne(ctx context.Context, st sessionstore.Store, name string, wait time.Duration) int {
	id, err := sessionstore.ResolveID(ctx, st, name)
	if err != nil {
		return c.fail(err)
	}
	w, err := sessionstore.AcquireWithin(ctx, st, id, sessionstore.AcquireOptions{Label: "sessions-rm"}, wait)
	var he *sessionstore.LeaseHeldError
	var ce *sessionstore.CorruptionError
	switch {
	case errors.As(err, &he):
		return c.fail(heldError(he, "rm", wait))
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
	fmt.Fprintf(c.stdout, "removed %s\n", id)
	return exitOK
}
