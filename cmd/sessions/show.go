package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/sessnap"
)

const showDoc = `
Prints a session's snapshot (the sessnap JSON document) indented: the latest
revision, or revision N with --rev.`

func cmdShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("show", showDoc, stdout, stderr)
	rev := c.fs.Uint64("rev", 0, "print revision `N` instead of the latest")
	id, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	return c.withAnyStore(ctx, func(st sessionstore.Store) int {
		rec, err := sessionstore.LoadAt(ctx, st, id, *rev)
		if err != nil {
			return c.fail(err)
		}
		b, err := sessnap.Marshal(rec.Snapshot)
		if err != nil {
			return c.fail(err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return c.fail(err)
		}
		out.WriteByte('\n')
		if _, err := stdout.Write(out.Bytes()); err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}
