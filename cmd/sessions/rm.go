package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

const rmDoc = `
Deletes a session. It takes the session's lease first, as any writer must:
a session another process holds is refused, naming the holder, unless --wait
is given, which waits up to that long for the holder to finish. Taking the
lease recovers what a dead holder left. Deletion is atomic (the directory is
renamed away, then removed).`

func cmdRm(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("rm", rmDoc, stdout, stderr)
	wait := c.fs.Duration("wait", 0, "wait up to `duration` for a held lease (default: refuse at once)")
	id, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	if *wait < 0 {
		return c.usageError("--wait must not be negative")
	}
	return c.withAnyStore(ctx, func(st sessionstore.Store) int {
		opts := sessionstore.AcquireOptions{Label: "sessions-rm"}
		var w sessionstore.Writer
		var err error
		if *wait == 0 {
			w, err = st.TryAcquire(ctx, id, opts)
		} else {
			wctx, cancel := context.WithTimeout(ctx, *wait)
			w, err = st.Acquire(wctx, id, opts)
			cancel()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				if ls, lerr := st.Lease(ctx, id); lerr == nil {
					err = &sessionstore.LeaseHeldError{ID: id, Status: ls}
				}
			}
		}
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
