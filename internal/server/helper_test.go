package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
)

// testServer is a server on a unix socket of a store in a temporary
// directory, and a client of it.
type testServer struct {
	t      testing.TB
	dir    string
	st     sessionstore.Store
	srv    *Server
	socket string
	c      *http.Client
}

// shortTemp returns a fresh directory with a short path (a unix socket's
// path is at most 104 bytes on darwin, 108 on linux).
func shortTemp(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("", "srv") //nolint:usetesting // a unix socket path is at most 104 bytes on darwin; t.TempDir's can be longer
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// openStore opens a jsonlstore in dir and verifies it when the test ends.
func openStore(tb testing.TB, dir string) *jsonlstore.Store {
	tb.Helper()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		rep, err := sessionstore.Verify(context.Background(), st)
		require.NoError(tb, err)
		require.True(tb, rep.OK(), "the store verifies: %+v", rep)
		require.NoError(tb, st.Close())
	})
	return st
}

// startServer serves a fresh jsonlstore with opts.
func startServer(tb testing.TB, opts Options) *testServer {
	tb.Helper()
	dir := shortTemp(tb)
	return serveStore(tb, dir, openStore(tb, filepath.Join(dir, "st")), opts)
}

func serveStore(tb testing.TB, dir string, st sessionstore.Store, opts Options) *testServer {
	tb.Helper()
	ts := &testServer{t: tb, dir: dir, st: st, socket: filepath.Join(dir, "s.sock")}
	ts.srv = New(st, opts)
	l, err := ListenUnix(context.Background(), ts.socket)
	require.NoError(tb, err)
	done := make(chan error, 1)
	go func() { done <- ts.srv.ServeUnix(l) }()
	ts.c = unixClient(ts.socket)
	tb.Cleanup(func() {
		ts.c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(tb, ts.srv.Shutdown(ctx))
		require.ErrorIs(tb, <-done, http.ErrServerClosed)
	})
	return ts
}

func unixClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
}

// answer is a response: its status and its JSON body decoded.
type answer struct {
	status int
	body   map[string]any
	raw    []byte
}

func (a answer) str(key string) string { s, _ := a.body[key].(string); return s }

func (a answer) num(key string) uint64 {
	n, _ := a.body[key].(json.Number)
	v, _ := n.Int64()
	return uint64(v)
}

// do sends a request whose body is body (a string as it is, else JSON).
func (ts *testServer) do(method, path string, body any) answer {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(ts.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, "http://sessions"+path, rd)
	require.NoError(ts.t, err)
	resp, err := ts.c.Do(req)
	require.NoError(ts.t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	a := answer{status: resp.StatusCode, raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	require.NoError(ts.t, dec.Decode(&a.body), "the answer is JSON: %s", raw)
	return a
}

// must is do, requiring status want.
func (ts *testServer) must(want int, method, path string, body any) answer {
	ts.t.Helper()
	a := ts.do(method, path, body)
	require.Equal(ts.t, want, a.status, "%s %s: %s", method, path, a.raw)
	return a
}

// create creates a session and returns its ID and handle.
func (ts *testServer) create() (id, handle string) {
	ts.t.Helper()
	a := ts.must(http.StatusCreated, "POST", "/v1/sessions", map[string]any{})
	return a.str("id"), a.str("handle")
}

// sameJSON requires a and b to be the same JSON value (numbers as
// written).
func sameJSON(tb testing.TB, a, b []byte) {
	tb.Helper()
	va, vb := decodeNumbers(tb, a), decodeNumbers(tb, b)
	require.True(tb, reflect.DeepEqual(va, vb), "JSON differs:\n%s\n%s", a, b)
}

func decodeNumbers(tb testing.TB, b []byte) any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(tb, dec.Decode(&v), "%s", b)
	return v
}

func textMessage(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "text": text}}}
}

func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }
