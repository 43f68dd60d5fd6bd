package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/transcript"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// openStore opens a directory store with its search index, as the CLI
// does, closed when the test ends.
func openStore(tb testing.TB, dir string) *jsonlstore.Store {
	tb.Helper()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, st.Close()) })
	return st
}

// addSession writes a session of msgs, with labels and a project,
// through the library, and releases its lease.
func addSession(tb testing.TB, st sessionstore.Store, id, project string, labels map[string]string, msgs ...string) {
	tb.Helper()
	cfg := sessiontest.Config(id)
	cfg.Labels = labels
	cfg.Workspace = session.Workspace{Project: project, Dir: project}
	s, err := session.New(cfg)
	require.NoError(tb, err)
	at := sessiontest.Epoch
	for i, text := range msgs {
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		require.NoError(tb, s.AppendMessage(session.TextMessage(role, text, at.Add(time.Duration(i)*time.Second))))
	}
	ctx := context.Background()
	w, err := st.Create(ctx, sessiontest.Snap(tb, s), sessionstore.AcquireOptions{})
	require.NoError(tb, err)
	require.NoError(tb, w.Release(ctx))
}

// connect serves st on an in-memory transport and returns a client
// session of it, both closed when the test ends.
func connect(tb testing.TB, st sessionstore.Store) *mcp.ClientSession {
	tb.Helper()
	ctx := context.Background()
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := New(st, Options{Version: "test"}).Connect(ctx, stt, nil)
	require.NoError(tb, err)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "test"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		require.NoError(tb, cs.Close())
		_ = ss.Wait()
	})
	return cs
}

// call calls tool with args, and fails the test on a protocol error.
func call(tb testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(tb, err, "%s is answered, not a protocol error", tool)
	return res
}

// texts is the text of each of res's content blocks.
func texts(tb testing.TB, res *mcp.CallToolResult) []string {
	tb.Helper()
	var out []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		require.True(tb, ok, "content is text: %T", c)
		out = append(out, tc.Text)
	}
	return out
}

// structured decodes res's structured content into v, after checking
// that it is not a tool error.
func structured(tb testing.TB, res *mcp.CallToolResult, v any) {
	tb.Helper()
	require.False(tb, res.IsError, "not a tool error: %v", texts(tb, res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(tb, err)
	require.NoError(tb, json.Unmarshal(b, v))
}

// toolError checks that res is a tool error whose text says want.
func toolError(tb testing.TB, res *mcp.CallToolResult, want string) {
	tb.Helper()
	require.True(tb, res.IsError, "a tool error: %v", texts(tb, res))
	require.Contains(tb, strings.Join(texts(tb, res), "\n"), want)
}

func TestTools(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	addSession(t, st, "01JAAAAAAAAAAAAAAAAAAAAAAA", "/src/alpha", map[string]string{"team": "core"},
		"why does the parser reject tabs", "the lexer treats a tab as an invalid rune; fixed in lexer.go")
	addSession(t, st, "01JBBBBBBBBBBBBBBBBBBBBBBB", "/src/beta", nil,
		"deploy the frobnicator to staging", "deployed; the parser was not involved")
	cs := connect(t, st)

	t.Run("list tools", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			require.True(t, tl.Annotations.ReadOnlyHint, "%s is read-only", tl.Name)
			// No subschema may be a bare true or false: the TypeScript
			// SDK's client refuses such a listing.
			for _, schema := range []any{tl.InputSchema, tl.OutputSchema} {
				b, err := json.Marshal(schema)
				require.NoError(t, err)
				require.NotRegexp(t, `:(true|false)[,}]`, strings.ReplaceAll(string(b), `"additionalProperties":false`, ""), "%s: %s", tl.Name, b)
			}
		}
		require.ElementsMatch(t, []string{"search_sessions", "list_sessions", "read_session", "read_message"}, names)
	})

	t.Run("search", func(t *testing.T) {
		var out SearchResult
		structured(t, call(t, cs, "search_sessions", map[string]any{"query": "lexer tab"}), &out)
		require.Len(t, out.Hits, 1)
		h := out.Hits[0]
		require.Equal(t, "01JAAAAAAAAAAAAAAAAAAAAAAA", h.Session)
		require.Equal(t, 1, h.Message)
		require.Equal(t, "assistant", h.Role)
		require.Contains(t, h.Snippet, "«lexer»")
		require.False(t, out.More)

		structured(t, call(t, cs, "search_sessions", map[string]any{"query": "parser"}), &out)
		require.Len(t, out.Hits, 2, "both sessions say parser")
		structured(t, call(t, cs, "search_sessions", map[string]any{"query": "parser", "limit": 1}), &out)
		require.Len(t, out.Hits, 1)
		require.True(t, out.More, "the limit was reached")
		structured(t, call(t, cs, "search_sessions", map[string]any{"query": "parser", "project": "/src/beta"}), &out)
		require.Len(t, out.Hits, 1)
		require.Equal(t, "01JBBBBBBBBBBBBBBBBBBBBBBB", out.Hits[0].Session)
		structured(t, call(t, cs, "search_sessions", map[string]any{"query": "parser", "labels": map[string]string{"team": "core"}}), &out)
		require.Len(t, out.Hits, 1)
		require.Equal(t, "01JAAAAAAAAAAAAAAAAAAAAAAA", out.Hits[0].Session)
	})

	t.Run("list", func(t *testing.T) {
		var out ListResult
		structured(t, call(t, cs, "list_sessions", nil), &out)
		require.Len(t, out.Sessions, 2)
		require.Equal(t, "01JBBBBBBBBBBBBBBBBBBBBBBB", out.Sessions[0].ID, "newest first")
		require.Equal(t, 2, out.Sessions[0].Messages)
		require.Equal(t, "free", out.Sessions[0].Lease)
		structured(t, call(t, cs, "list_sessions", map[string]any{"limit": 1}), &out)
		require.Len(t, out.Sessions, 1)
		require.True(t, out.More)
		structured(t, call(t, cs, "list_sessions", map[string]any{"project": "/src/alpha"}), &out)
		require.Len(t, out.Sessions, 1)
		require.Equal(t, map[string]string{"team": "core"}, out.Sessions[0].Labels)
	})

	t.Run("read session is show --format markdown", func(t *testing.T) {
		rec, err := st.Load(ctx, "01JAAAAAAAAAAAAAAAAAAAAAAA")
		require.NoError(t, err)
		s, err := rec.Session()
		require.NoError(t, err)
		var want bytes.Buffer
		require.NoError(t, transcript.WriteMarkdown(&want, s, transcript.Options{}))
		res := call(t, cs, "read_session", map[string]any{"id": "01jaaa"})
		require.False(t, res.IsError, "%v", texts(t, res))
		require.Equal(t, []string{want.String()}, texts(t, res), "a unique prefix in any case names the session; nothing was cut")
	})

	t.Run("read an empty session", func(t *testing.T) {
		addSession(t, st, "empty", "/src/e", nil)
		got := texts(t, call(t, cs, "read_session", map[string]any{"id": "empty"}))
		require.Len(t, got, 1)
		require.True(t, strings.HasPrefix(got[0], "# Session empty\n"), got[0])
		toolError(t, call(t, cs, "read_message", map[string]any{"id": "empty", "index": 0}), "has 0 messages")
	})

	t.Run("read message", func(t *testing.T) {
		var out Message
		structured(t, call(t, cs, "read_message", map[string]any{"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "index": 1}), &out)
		require.Equal(t, 1, out.Index)
		require.Equal(t, 2, out.Messages)
		require.Equal(t, "assistant", out.Role)
		require.False(t, out.Truncated)
		b, err := json.Marshal(out.Message)
		require.NoError(t, err)
		require.Contains(t, string(b), "the lexer treats a tab as an invalid rune")
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, tool string
			args       map[string]any
			want       string
		}{
			{"unknown session", "read_session", map[string]any{"id": "01JZZZ"}, `no session "01JZZZ"`},
			{"bad id", "read_session", map[string]any{"id": "../etc"}, "invalid session id"},
			{"empty id", "read_message", map[string]any{"id": "", "index": 0}, "id is empty"},
			{"ambiguous prefix", "read_message", map[string]any{"id": "01J", "index": 0}, "ambiguous"},
			{"index out of range", "read_message", map[string]any{"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "index": 2}, "has 2 messages (0 to 1)"},
			{"negative index", "read_message", map[string]any{"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "index": -1}, "index -1"},
			{"from past the end", "read_session", map[string]any{"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "from_message": 5}, "from_message 5"},
			{"empty query", "search_sessions", map[string]any{"query": ""}, "bad search query"},
			{"negative limit", "search_sessions", map[string]any{"query": "x", "limit": -1}, "limit -1 is negative"},
			{"unknown state", "list_sessions", map[string]any{"states": []string{"sleeping"}}, `unknown state "sleeping"`},
			{"missing argument", "read_message", map[string]any{"index": 0}, "id"},
			{"wrong type", "read_message", map[string]any{"id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "index": "one"}, "index"},
		} {
			t.Run(tc.name, func(t *testing.T) { toolError(t, call(t, cs, tc.tool, tc.args), tc.want) })
		}
	})
}

// TestReadSessionBounded checks that a long session is read in pages of
// whole messages that together are the whole conversation, and that a
// message larger than a page is cut and says so.
func TestReadSessionBounded(t *testing.T) {
	st := openStore(t, t.TempDir())
	var msgs []string
	for i := range 40 {
		msgs = append(msgs, strings.Repeat("word"+string(rune('a'+i%26))+" ", 100)) // ~600 bytes each
	}
	addSession(t, st, "long", "/src/long", nil, msgs...)
	big := strings.Repeat("line of a huge tool output\n", 1000) // 27,000 bytes
	addSession(t, st, "big", "/src/big", nil, "short question", big)
	cs := connect(t, st)

	var pages []string
	from := 0
	for range 41 {
		res := call(t, cs, "read_session", map[string]any{"id": "long", "from_message": from, "max_bytes": 4096})
		got := texts(t, res)
		require.False(t, res.IsError, "%v", got)
		require.Len(t, got, 2, "the Markdown and a note")
		require.LessOrEqual(t, len(got[0]), 4096)
		pages = append(pages, got[0])
		if strings.Contains(got[1], "the end of the session") {
			break
		}
		require.Contains(t, got[1], "Call read_session with from_message")
		var next int
		_, err := fmt.Sscan(got[1][strings.LastIndex(got[1], "from_message ")+len("from_message "):], &next)
		require.NoError(t, err, "note: %s", got[1])
		require.Greater(t, next, from)
		from = next
	}
	require.Greater(t, len(pages), 2, "the session took several pages")
	// Every message appears in exactly one page, in order.
	var all strings.Builder
	for _, p := range pages {
		all.WriteString(p[strings.Index(p, "\n## "):])
	}
	require.Equal(t, 40, strings.Count(all.String(), "\n## "))
	for i, m := range msgs {
		require.Contains(t, all.String(), m, "message %d", i)
	}

	res := call(t, cs, "read_session", map[string]any{"id": "big", "from_message": 1, "max_bytes": 2048})
	got := texts(t, res)
	require.False(t, res.IsError, "%v", got)
	require.LessOrEqual(t, len(got[0]), 2048)
	require.Contains(t, got[1], "message 1 of session big alone renders to")
	require.Contains(t, got[1], "read_message with index 1")

	var out Message
	structured(t, call(t, cs, "read_message", map[string]any{"id": "big", "index": 1, "max_bytes": 2048}), &out)
	require.True(t, out.Truncated)
	require.Nil(t, out.Message)
	require.Greater(t, out.Bytes, len(big))
	require.LessOrEqual(t, len(out.Text), 2048)
	require.True(t, strings.HasPrefix(big, out.Text))
}

// TestReadOnly checks that the tools read a session its live holder
// holds, and leave it and its lease as they were.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	addSession(t, st, "held", "/src/h", nil, "a question about tabs", "an answer")
	w, err := st.TryAcquire(ctx, "held", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Release(ctx)) }()
	before, err := st.Load(ctx, "held")
	require.NoError(t, err)
	cs := connect(t, st)

	var sr SearchResult
	structured(t, call(t, cs, "search_sessions", map[string]any{"query": "tabs"}), &sr)
	require.Len(t, sr.Hits, 1)
	var lr ListResult
	structured(t, call(t, cs, "list_sessions", nil), &lr)
	require.Equal(t, "held", lr.Sessions[0].Lease)
	require.False(t, call(t, cs, "read_session", map[string]any{"id": "held"}).IsError)
	require.False(t, call(t, cs, "read_message", map[string]any{"id": "held", "index": 0}).IsError)

	after, err := st.Load(ctx, "held")
	require.NoError(t, err)
	require.Equal(t, before.Revision, after.Revision, "nothing was written")
	require.NoError(t, w.Heartbeat(ctx), "the holder still holds its lease")
	ls, err := st.Lease(ctx, "held")
	require.NoError(t, err)
	require.Equal(t, summary.LeaseHeld, ls.State)
	require.Equal(t, w.Generation(), ls.Generation)
}

// TestDamagedIndex checks that a search over a search index damaged on
// disk is answered (the store rebuilds what it cannot read), or is a
// tool error: never a crash or a lost connection.
func TestDamagedIndex(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	addSession(t, st, "a", "/src/a", nil, "the frobnicator overheats", "cool it")
	cs := connect(t, st)
	var out SearchResult
	structured(t, call(t, cs, "search_sessions", map[string]any{"query": "frobnicator"}), &out)
	require.Len(t, out.Hits, 1)

	damaged := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, ".search"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "lock" {
			return err
		}
		damaged++
		return os.WriteFile(p, bytes.Repeat([]byte("garbage!"), 512), 0o600)
	}))
	require.Positive(t, damaged, "the index has files to damage")

	res := call(t, cs, "search_sessions", map[string]any{"query": "frobnicator"})
	t.Logf("search over the damaged index: error %v: %.200s", res.IsError, texts(t, res))
	if res.IsError {
		toolError(t, res, "search")
	} else {
		structured(t, res, &out)
		require.Len(t, out.Hits, 1, "the search is still right")
	}
	// The connection goes on.
	var lr ListResult
	structured(t, call(t, cs, "list_sessions", nil), &lr)
	require.Len(t, lr.Sessions, 1)
}

// TestGuard checks that a handler's panic is a tool error naming the
// tool, and the connection goes on.
func TestGuard(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "t"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "boom"}, guard(func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		panic("a damaged session")
	}))
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, stt, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "c"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cs.Close()); _ = ss.Wait() }()
	toolError(t, call(t, cs, "boom", nil), "internal error in boom: a damaged session")
	toolError(t, call(t, cs, "boom", nil), "internal error in boom")
}
