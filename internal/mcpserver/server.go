package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Bounds on what one tool call returns.
const (
	// DefaultHits and MaxHits bound a search's hits.
	DefaultHits = 20
	MaxHits     = 100
	// DefaultList and MaxList bound a listing's sessions.
	DefaultList = 20
	MaxList     = 200
	// DefaultReadBytes and MaxReadBytes bound the text a read returns:
	// a session's Markdown, one message's JSON.
	DefaultReadBytes = 64 << 10
	MaxReadBytes     = 1 << 20
	// minReadBytes is the least max_bytes a read takes: room for a
	// session's facts and a message's header.
	minReadBytes = 1 << 10
)

// ErrBadArgument reports a tool argument out of its bounds.
var ErrBadArgument = errors.New("mcpserver: bad argument")

// Options configure a server. The zero value works.
type Options struct {
	// Version is the version the server reports to clients (default: the
	// main module's, from the build information).
	Version string
	// Logger receives the SDK's reports of protocol trouble; nil means
	// none.
	Logger *slog.Logger
}

// New returns an MCP server whose tools read st. Run it on a transport
// (mcp.StdioTransport for `sessions mcp`); st must stay open while it
// runs. The server never writes to st.
func New(st sessionstore.Store, opts Options) *mcp.Server {
	v := opts.Version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sessionstore", Title: "sessionstore history", Version: v},
		&mcp.ServerOptions{
			Logger: logger,
			Instructions: "Search and read the history of past agent sessions kept in a sessionstore store: " +
				"search_sessions finds where words were said, list_sessions lists recent sessions, " +
				"read_session reads one as Markdown, read_message reads one message. Read-only.",
		})
	t := &tools{st: st}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	mcp.AddTool(srv, &mcp.Tool{Name: "search_sessions", Title: "Search past sessions", Annotations: readOnly,
		Description: "Full-text search over past sessions' titles and messages (prompts, replies, reasoning, tool calls and results), " +
			"best hits first. Each hit names the session, the message index (from 0; -1 for the title), its role and a snippet " +
			"with the matches between « and ». Query: words, all of which must be in one message (any case); \"a phrase\"; prefixes (work*). " +
			fmt.Sprintf("At most limit hits (default %d, at most %d).", DefaultHits, MaxHits),
	}, guard(t.search))
	mcp.AddTool(srv, &mcp.Tool{Name: "list_sessions", Title: "List sessions", Annotations: readOnly,
		Description: "List sessions, most recently updated first: ID, title, state, project, labels, message count, times. " +
			fmt.Sprintf("At most limit sessions (default %d, at most %d); more says whether others match.", DefaultList, MaxList),
	}, guard(t.list))
	mcp.AddTool(srv, &mcp.Tool{Name: "read_session", Title: "Read a session as Markdown", Annotations: readOnly,
		Description: "One session's conversation as Markdown (as `sessions show --format markdown` prints it): its facts, then each message " +
			"with its role and time; text in full, tool calls and results folded to a line. " +
			fmt.Sprintf("At most max_bytes bytes (default %d, at most %d): a longer session is cut between messages, ", DefaultReadBytes, MaxReadBytes) +
			"and a note after it says which messages were shown and the from_message to go on with. id: the session's ID or a unique prefix.",
	}, guard(t.readSession))
	mcp.AddTool(srv, &mcp.Tool{Name: "read_message", Title: "Read one message", Annotations: readOnly, OutputSchema: messageSchema(),
		Description: "One message of a session, by its index (from 0, as search hits give it), as JSON: role, time, parts " +
			"(text, reasoning, tool calls with their input, tool results with their output). " +
			fmt.Sprintf("A message over max_bytes (default %d, at most %d) comes as its text, cut, with truncated set.", DefaultReadBytes, MaxReadBytes),
	}, guard(t.readMessage))
	return srv
}

// messageSchema is read_message's output schema: Message's, with its
// message an object. (Inferred from an interface it would be the schema
// true, which clients that check schemas strictly, as the TypeScript
// SDK does, refuse in a listing.)
func messageSchema() *jsonschema.Schema {
	s, err := jsonschema.For[Message](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of Message: %v", err)) // a static type: fails every test, or never
	}
	s.Properties["message"] = &jsonschema.Schema{Type: "object",
		Description: "the message as `sessions show` prints it (role, parts, created_at, …), when its JSON is at most max_bytes"}
	return s
}

// tools are the server's tool handlers over one store.
type tools struct {
	st sessionstore.Store
}

// guard makes a panic in a handler a tool error, so that one bad session
// costs one call, not the connection (the SDK does not recover them).
func guard[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("mcpserver: internal error in %s: %v", req.Params.Name, p)
			}
		}()
		return h(ctx, req, in)
	}
}

// resolve finds the session name names (its ID, or a unique prefix of
// one), with an error that says which name failed and why.
func (t *tools) resolve(ctx context.Context, name string) (session.SessionID, error) {
	if name == "" {
		return "", fmt.Errorf("%w: id is empty (give a session's ID, or a unique prefix of one)", ErrBadArgument)
	}
	id, err := sessionstore.ResolveID(ctx, t.st, name)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		return "", fmt.Errorf("no session %q in the store: %w", name, err)
	case err != nil:
		return "", fmt.Errorf("session %q: %w", name, err)
	}
	return id, nil
}

// bound is n, or def when n is 0; it fails for a negative n and clamps
// one above most.
func bound(name string, n, def, most int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: %s %d is negative", ErrBadArgument, name, n)
	case n == 0:
		return def, nil
	}
	return min(n, most), nil
}

// projectDir is the project filter dir names, made absolute as the
// CLI's --project is (relative to the server's working directory).
func projectDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	p, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: project %q: %w", ErrBadArgument, dir, err)
	}
	return p, nil
}
