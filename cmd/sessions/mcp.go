package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/mcpserver"
)

const mcpDoc = `
Serves the store's history to a coding agent over the Model Context
Protocol, on standard input and output, until the client closes its end
(or SIGINT, SIGTERM). The agent's MCP client starts it; for example:

  {"mcpServers": {"sessions": {"command": "sessions", "args": ["mcp"]}}}

(with "--dir", "DIR" after "mcp" for a store other than the default).
Its tools:

  search_sessions  words, phrases and prefixes over every session's title
                   and messages: hits with the session, the message's
                   index and role, and a snippet («matches» marked)
  list_sessions    sessions, most recently updated first, by project,
                   labels or state
  read_session     one session as Markdown, as show --format markdown
                   prints it, in pages of whole messages under max_bytes
  read_message     one message, by session and index, as JSON

It only reads: it takes no lease and writes no session, so it runs beside
the agents that hold them. (A search brings the store's search index up
to date first, as 'sessions search' does.) A bad argument, an unknown
session or a store that cannot answer is a tool error with its reason.
Nothing but the protocol is written to standard output; warnings go to
standard error.`

func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return mcpOn(ctx, args, os.Stdin, stdout, stderr)
}

func mcpOn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newSub("mcp", mcpDoc, stdout, stderr)
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		srv := mcpserver.New(st, mcpserver.Options{Logger: cli.WarnLogger(stderr)})
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return c.fail(err)
		}
		return exitOK
	})
}

// nopWriteCloser is a writer the transport may close without closing
// standard output under the command.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
