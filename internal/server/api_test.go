package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// items are Agents SDK items of every shape the SDK adds, and JSON that
// trips careless codecs: numbers beyond float precision, escapes, deep
// nesting, empty containers, null.
var items = []string{
	`{"role":"user","content":"Where is the zebra?"}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"look at this"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]}`,
	`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"thinking about stripes"}],"encrypted_content":"gAAAA"}`,
	`{"type":"function_call","call_id":"call_1","name":"lookup","arguments":"{\"animal\":\"zebra\",\"n\":1}","id":"fc_1","status":"completed"}`,
	`{"type":"function_call_output","call_id":"call_1","output":"savanna"}`,
	`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"In the savanna.","annotations":[],"logprobs":null}]}`,
	`{"type":"x_future","big":12345678901234567890123,"tiny":1e-320,"neg":-0.0,"exp":6.02E23,"u":"\u00e9\u2028\ud83d\ude00","esc":"a\"b\\c\n\t</script>","empty":{},"none":[],"nil":null,"deep":[[[[{"a":[1,{"b":true}]}]]]]}`,
	`{"role":"developer","content":"be brief"}`,
}

func TestItemsRoundTrip(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	raw := make([]json.RawMessage, len(items))
	for i, it := range items {
		raw[i] = json.RawMessage(it)
	}
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": raw[:3]})
	a := ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": raw[3:]})
	require.EqualValues(t, 3, a.num("revision"))

	var got struct{ Items []json.RawMessage }
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil).raw, &got))
	require.Len(t, got.Items, len(items))
	for i := range items {
		sameJSON(t, []byte(items[i]), got.Items[i])
	}
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items?limit=2", id), nil).raw, &got))
	require.Len(t, got.Items, 2)
	sameJSON(t, []byte(items[len(items)-2]), got.Items[0])

	// Their text is searchable: a user's words, a call's arguments, a
	// tool's output, reasoning's summary.
	for _, word := range []string{"zebra", "savanna", "stripes"} {
		res := ts.must(http.StatusOK, "GET", "/v1/search?q="+word, nil)
		require.NotEmpty(t, res.body["hits"], "search %q: %s", word, res.raw)
	}
	// A second process's view: the messages as the store keeps them.
	rec, err := ts.st.Load(context.Background(), session.SessionID(id))
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, len(items))
	require.Equal(t, session.RoleUser, rec.Snapshot.Messages[0].Role)
	require.Equal(t, session.RoleTool, rec.Snapshot.Messages[4].Role)
	require.Equal(t, session.RoleSystem, rec.Snapshot.Messages[7].Role)
	require.Equal(t, "Where is the zebra?", rec.Snapshot.Title, "the first user message titles the session")
}

func TestMessagesOfOtherWritersReadAsItems(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/messages", id), map[string]any{"handle": h, "messages": []any{
		textMessage("user", "hello"), textMessage("tool", "42"),
	}})
	var got struct{ Items []json.RawMessage }
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil).raw, &got))
	require.Len(t, got.Items, 2)
	sameJSON(t, []byte(`{"role":"user","content":"hello"}`), got.Items[0])
	sameJSON(t, []byte(`{"role":"user","content":"42"}`), got.Items[1])

	a := ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/messages?last=1", id), nil)
	require.EqualValues(t, 2, a.num("total"))
	msgs := a.body["messages"].([]any)
	require.Len(t, msgs, 1)
	require.Equal(t, "tool", msgs[0].(map[string]any)["role"])
}

func TestPopAndClear(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []json.RawMessage{
		json.RawMessage(items[0]), json.RawMessage(`{"role":"assistant","content":"the okapi is not a zebra"}`),
	}})
	a := ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/pop", id), map[string]any{"handle": h})
	sameJSON(t, []byte(`{"role":"assistant","content":"the okapi is not a zebra"}`), mustRaw(t, a.body["item"]))
	require.EqualValues(t, 3, a.num("revision"))
	res := ts.must(http.StatusOK, "GET", "/v1/search?q=okapi", nil)
	require.Empty(t, res.body["hits"], "a popped message is not in the latest revision: %s", res.raw)

	// Appending after a pop continues from the shorter conversation.
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"quagga"}`)}})
	var got struct{ Items []json.RawMessage }
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil).raw, &got))
	require.Len(t, got.Items, 2)
	sameJSON(t, []byte(`{"role":"assistant","content":"quagga"}`), got.Items[1])

	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/clear", id), map[string]any{"handle": h})
	require.EqualValues(t, 5, a.num("revision"))
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/pop", id), map[string]any{"handle": h})
	require.Nil(t, a.body["item"], "popping an empty session gives nothing")
	require.EqualValues(t, 5, a.num("revision"), "and writes nothing")
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil).raw, &got))
	require.Empty(t, got.Items)

	// The history keeps every revision: a pop is a new revision, never a rewrite.
	n := 0
	for rec, err := range ts.st.History(context.Background(), session.SessionID(id)) {
		require.NoError(t, err)
		n++
		if rec.Revision == 2 {
			require.Len(t, rec.Snapshot.Messages, 2)
		}
	}
	require.Equal(t, 5, n)
}

func mustRaw(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestLabelsLeaseAndList(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	other, h2 := ts.create()
	a := ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "set": map[string]string{"team": "zoo", "x": "1"}})
	require.Equal(t, map[string]any{"team": "zoo", "x": "1"}, a.body["labels"])
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "remove": []string{"x"}})
	require.Equal(t, map[string]any{"team": "zoo"}, a.body["labels"])
	rev := a.num("revision")
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "set": map[string]string{"team": "zoo"}})
	require.Equal(t, rev, a.num("revision"), "no change, no revision")

	page := ts.must(http.StatusOK, "GET", "/v1/sessions?label=team=zoo", nil)
	list := page.body["items"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, id, list[0].(map[string]any)["id"])

	lease := ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/lease", id), nil)
	require.Equal(t, "held", lease.str("state"))
	ts.must(http.StatusOK, "DELETE", "/v1/handles/"+h, nil)
	ts.must(http.StatusOK, "DELETE", "/v1/handles/"+h, nil) // idempotent
	lease = ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/lease", id), nil)
	require.Equal(t, "free", lease.str("state"))
	a = ts.must(http.StatusConflict, "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "set": map[string]string{"y": "2"}})
	require.Equal(t, "handle_released", a.str("code"))

	// Resume, and delete through the handle.
	a = ts.must(http.StatusCreated, "POST", path("/v1/sessions/%s/handles", id), map[string]any{"holder": "test"})
	h = a.str("handle")
	require.EqualValues(t, 3, a.num("revision"))
	ts.must(http.StatusOK, "DELETE", path("/v1/sessions/%s", id), map[string]any{"handle": h})
	ts.must(http.StatusNotFound, "GET", path("/v1/sessions/%s", id), nil)
	a = ts.must(http.StatusNotFound, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []any{}})
	require.Equal(t, "deleted", a.str("code"))
	ts.must(http.StatusOK, "GET", path("/v1/sessions/%s", other), nil)
	ts.must(http.StatusOK, "DELETE", "/v1/handles/"+h2, nil)
	require.Zero(t, ts.srv.Handles())
}

// TestHostileRequests sends what a careless or hostile client might:
// each gets a 4xx with a clear message, and nothing is written.
func TestHostileRequests(t *testing.T) {
	ts := startServer(t, Options{MaxBodyBytes: 4096})
	id, h := ts.create()
	other, h2 := ts.create()
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/messages", id), map[string]any{"handle": h, "messages": []any{textMessage("user", "first")}})
	items := path("/v1/sessions/%s/items", id)
	msgs := path("/v1/sessions/%s/messages", id)
	tests := []struct {
		name         string
		method, path string
		body         any
		wantStatus   int
		wantCode     string
		wantIn       string
	}{
		{"malformed JSON", "POST", items, `{"handle":`, 400, "malformed", "unexpected EOF"},
		{"not an object", "POST", items, `[1,2]`, 400, "malformed", "cannot unmarshal array"},
		{"empty body", "POST", items, ``, 400, "malformed", "needs a JSON object"},
		{"trailing data", "POST", items, `{"handle":"` + h + `","items":[]} {}`, 400, "malformed", "data after"},
		{"unknown field", "POST", items, map[string]any{"handle": h, "items": []any{}, "itmes": 1}, 400, "malformed", `unknown field "itmes"`},
		{"unknown field in a message", "POST", msgs, map[string]any{"handle": h, "messages": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "x", "colour": 1}}}}}, 400, "invalid", `unknown field "colour"`},
		{"invalid message", "POST", msgs, map[string]any{"handle": h, "messages": []any{textMessage("user", "ok"), map[string]any{"role": "robot", "parts": []any{}}}}, 400, "invalid", "message 1"},
		{"a content reference", "POST", msgs, map[string]any{"handle": h, "messages": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "blob": map[string]any{"of": "text", "sha256": strings.Repeat("0", 64), "size": 3}}}}}}, 400, "invalid", "content reference"},
		{"an item that is not an object", "POST", items, map[string]any{"handle": h, "items": []any{map[string]any{"role": "user", "content": "ok"}, "just text"}}, 400, "invalid", "item 1"},
		{"an item too deep", "POST", items, `{"handle":"` + h + `","items":[` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `]}`, 400, "invalid", "deeper"},
		{"oversized body", "POST", items, map[string]any{"handle": h, "items": []any{map[string]any{"content": strings.Repeat("x", 5000)}}}, 413, "too_large", "larger than 4096"},
		{"no handle", "POST", items, map[string]any{"items": []any{}}, 400, "no_handle", "names its handle"},
		{"unknown handle", "POST", items, map[string]any{"handle": "ffff", "items": []any{}}, 404, "unknown_handle", "no such handle"},
		{"another session's handle", "POST", items, map[string]any{"handle": h2, "items": []any{}}, 400, "handle_mismatch", other},
		{"stale revision", "POST", items, map[string]any{"handle": h, "revision": 1, "items": []any{map[string]any{"content": "x"}}}, 409, "conflict", "not 1"},
		{"bad ID", "GET", "/v1/sessions/..%2F..%2Fetc/messages", nil, 400, "invalid_id", "invalid session id"},
		{"bad ID to write", "POST", "/v1/sessions/a%20b/items", map[string]any{"handle": h, "items": []any{}}, 400, "invalid_id", "invalid session id"},
		{"unknown session", "POST", "/v1/sessions/nosuch/handles", map[string]any{}, 404, "not_found", "not found"},
		{"unknown session read", "GET", "/v1/sessions/nosuch/items", nil, 404, "not_found", "not found"},
		{"held session", "POST", path("/v1/sessions/%s/handles", id), map[string]any{}, 409, "lease_held", "lease held"},
		{"a bad count", "GET", path("/v1/sessions/%s/items?limit=-1", id), nil, 400, "bad_query", "not a count"},
		{"a bad filter", "GET", "/v1/sessions?state=sleeping", nil, 400, "bad_query", "sleeping"},
		{"an unknown parameter", "GET", "/v1/sessions?colour=red", nil, 400, "bad_query", "colour"},
		{"a bad search", "GET", "/v1/search?q=x&limit=-1", nil, 400, "bad_query", "negative limit"},
		{"an existing ID", "POST", "/v1/sessions", map[string]any{"id": id}, 409, "exists", "exists"},
		{"an invalid label", "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "set": map[string]string{"": "x"}}, 400, "invalid", "label"},
		{"no endpoint", "PUT", "/v1/sessions", map[string]any{}, 404, "no_endpoint", "PUT /v1/sessions"},
		{"a too long wait", "POST", path("/v1/sessions/%s/handles", other), map[string]any{"wait_ms": 1 << 40}, 400, "invalid", "wait_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ts.do(tt.method, tt.path, tt.body)
			require.Equal(t, tt.wantStatus, a.status, "%s", a.raw)
			require.Equal(t, tt.wantCode, a.str("code"), "%s", a.raw)
			require.Contains(t, a.str("error"), tt.wantIn)
		})
	}
	for _, s := range []string{id, other} {
		rec, err := ts.st.Load(context.Background(), session.SessionID(s))
		require.NoError(t, err)
		want := uint64(1)
		if s == id {
			want = 2
		}
		require.Equal(t, want, rec.Revision, "nothing was written to %s", s)
	}
	// The handles still work after all that.
	ts.must(http.StatusOK, "POST", items, map[string]any{"handle": h, "items": []any{map[string]any{"content": "still here"}}})
}

func TestHandleLimits(t *testing.T) {
	ts := startServer(t, Options{MaxHandlesPerClient: 2, MaxHandles: 3})
	ts.create()
	ts.create()
	a := ts.must(http.StatusTooManyRequests, "POST", "/v1/sessions", map[string]any{})
	require.Contains(t, a.str("error"), "this client holds 2 handles")
	ts.must(http.StatusOK, "GET", "/v1/sessions", nil) // reads need no handle
	require.Equal(t, 2, ts.srv.Handles())
}

func TestConnectionLimit(t *testing.T) {
	ts := startServer(t, Options{MaxConns: 1})
	hold, err := net.Dial("unix", ts.socket)
	require.NoError(t, err)
	// The held connection takes the one slot once the server accepted it:
	// a request on it proves that.
	_, err = hold.Write([]byte("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(hold), nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	a := ts.do("GET", "/v1/health", nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Contains(t, a.str("error"), "too many connections (at most 1)")
	require.NoError(t, hold.Close())
}

// syncBuffer is a log the server writes from its goroutines.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

func TestTCPNeedsTheToken(t *testing.T) {
	const token = "s3cr3t-t0ken-that-is-long-enough"
	log := &syncBuffer{mu: make(chan struct{}, 1)}
	dir := shortTemp(t)
	st := openStore(t, dir+"/st")
	srv := New(st, Options{Token: token, Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	_, err := ListenTCP(context.Background(), "0.0.0.0:0")
	require.ErrorContains(t, err, "not a loopback address")
	l, err := ListenTCP(context.Background(), "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTCP(l) }()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	call := func(method, path, auth, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+l.Addr().String()+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	status, body := call("GET", "/v1/health", "", "")
	require.Equal(t, http.StatusUnauthorized, status, body)
	status, _ = call("GET", "/v1/health", "Bearer wrong", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, body = call("POST", "/v1/sessions", "Bearer "+token, "{}")
	require.Equal(t, http.StatusCreated, status, body)
	var created struct{ ID, Handle string }
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	status, body = call("POST", "/v1/handles/"+created.Handle+"/heartbeat", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, body)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	require.ErrorIs(t, <-done, http.ErrServerClosed)
	logged := log.String()
	require.Contains(t, logged, "route=\"POST /v1/handles/{handle}/heartbeat\"")
	require.NotContains(t, logged, token, "the token is never logged")
	require.NotContains(t, logged, "wrong")
	require.NotContains(t, logged, created.Handle, "nor a handle")
	lease, err := st.Lease(context.Background(), session.SessionID(created.ID))
	require.NoError(t, err)
	require.Equal(t, "free", string(lease.State), "Shutdown released the handle's lease")
	noToken := New(st, Options{})
	require.ErrorIs(t, noToken.ServeTCP(l), ErrNoToken)
	require.NoError(t, noToken.Shutdown(ctx))
}

func TestWatchStreamsChanges(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://sessions/v1/watch?id="+id, nil)
	require.NoError(t, err)
	resp, err := ts.c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var c map[string]any
				require.NoError(t, json.Unmarshal([]byte(d), &c))
				return c
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return nil
	}
	c := next()
	require.Equal(t, id, c["id"])
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []any{map[string]any{"content": "x"}}})
	for {
		c = next()
		if sum, _ := c["summary"].(map[string]any); sum != nil && sum["revision"] == float64(2) {
			break
		}
	}
}

// TestRefusedInputKeepsTheWriter: a refused message leaves the writer's
// session as it was stored, so the next write goes on from there.
func TestRefusedInputKeepsTheWriter(t *testing.T) {
	dir := shortTemp(t)
	st := openStore(t, dir)
	ctx := context.Background()
	w, err := Create(ctx, st, CreateOptions{}, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Release(ctx)) }()
	ok := session.TextMessage(session.RoleUser, "one", time.Time{})
	_, err = w.AddMessages(ctx, 0, []session.Message{ok, {Role: "robot"}})
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	require.Equal(t, 0, w.Len())
	rev, err := w.AddMessages(ctx, 1, []session.Message{ok})
	require.NoError(t, err)
	require.EqualValues(t, 2, rev)
	_, _, err = w.SetLabels(ctx, map[string]string{"a": "1", "": "x"}, nil)
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	rec, err := st.Load(ctx, w.ID())
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, 1)
	require.Empty(t, rec.Snapshot.Labels)
	require.False(t, rec.Snapshot.Messages[0].CreatedAt.IsZero(), "a message without a time is stamped")
}

// TestShutdownEndsWatchers: a watch does not hold up Shutdown, and a
// write in progress when it starts is finished and answered.
func TestShutdownEndsWatchers(t *testing.T) {
	dir := shortTemp(t)
	st := openStore(t, dir+"/st")
	entered, proceed := make(chan struct{}), make(chan struct{})
	srv := New(st, Options{Hooks: func(p string) {
		if p == "append" {
			close(entered)
			<-proceed
		}
	}})
	l, err := ListenUnix(context.Background(), dir+"/s.sock")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.ServeUnix(l) }()
	ts := &testServer{t: t, st: st, srv: srv, c: unixClient(dir + "/s.sock")}
	defer ts.c.CloseIdleConnections()
	id, h := ts.create()

	resp, err := ts.c.Get("http://sessions/v1/watch")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	wrote := make(chan answer, 1)
	go func() {
		wrote <- ts.do("POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []any{map[string]any{"content": "in flight"}}})
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	<-srv.ctx.Done() // Shutdown has begun
	close(proceed)
	a := <-wrote
	require.Equal(t, http.StatusOK, a.status, "the write in progress finished: %s", a.raw)
	require.NoError(t, <-shut)
	require.ErrorIs(t, <-done, http.ErrServerClosed)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream ended cleanly")
	rec, err := st.Load(context.Background(), session.SessionID(id))
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, 1)
}

// TestSearchWithoutTheIndex: a directory store opened without its search
// index answers a search 501 unsupported, saying how to open it with one;
// everything else works.
func TestSearchWithoutTheIndex(t *testing.T) {
	dir := shortTemp(t)
	st, err := jsonlstore.Open(filepath.Join(dir, "st"), jsonlstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	ts := serveStore(t, dir, st, Options{})
	ts.create()
	a := ts.must(http.StatusNotImplemented, "GET", "/v1/search?q=anything", nil)
	require.Equal(t, "unsupported", a.str("code"))
	require.Contains(t, a.str("error"), "fts.New()")
	ts.must(http.StatusOK, "GET", "/v1/sessions", nil)
}
