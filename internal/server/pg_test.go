package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
)

// TestServeOverPostgreSQL runs the server over a store on a real
// PostgreSQL server (pgtest starts one, or skips without it; CI requires
// it): every kind of write through a handle, reads as items and as
// messages, search, labels and the lease, and a Go agent and the server
// excluding each other on one session as they do on a directory store.
func TestServeOverPostgreSQL(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabaseFrom(t, "pgstore", func(ctx context.Context, dsn string) error {
		_, err := pgstore.Migrate(ctx, dsn)
		return err
	})
	st, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	ts := serveStore(t, shortTemp(t), st, Options{})

	id, h := ts.create()
	raw := make([]json.RawMessage, len(items))
	for i, it := range items {
		raw[i] = json.RawMessage(it)
	}
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": raw})
	a := ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/messages", id), map[string]any{"handle": h, "messages": []any{textMessage("user", "and the okapi?")}})
	require.EqualValues(t, 3, a.num("revision"))

	var got struct{ Items []json.RawMessage }
	require.NoError(t, json.Unmarshal(ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil).raw, &got))
	require.Len(t, got.Items, len(items)+1)
	for i := range items {
		sameJSON(t, []byte(items[i]), got.Items[i])
	}
	sameJSON(t, []byte(`{"role":"user","content":"and the okapi?"}`), got.Items[len(items)])
	rec, err := st.Load(ctx, session.SessionID(id))
	require.NoError(t, err)
	require.Len(t, rec.Snapshot.Messages, len(items)+1)
	require.Equal(t, "Where is the zebra?", rec.Snapshot.Title)

	res := ts.must(http.StatusOK, "GET", "/v1/search?q=okapi", nil)
	require.NotEmpty(t, res.body["hits"], "search: %s", res.raw)

	// Pop and clear are new revisions; the history keeps the old ones.
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/pop", id), map[string]any{"handle": h})
	sameJSON(t, []byte(`{"role":"user","content":"and the okapi?"}`), mustRaw(t, a.body["item"]))
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/labels", id), map[string]any{"handle": h, "set": map[string]string{"team": "zoo"}})
	require.Equal(t, map[string]any{"team": "zoo"}, a.body["labels"])
	page := ts.must(http.StatusOK, "GET", "/v1/sessions?label=team=zoo", nil)
	require.Len(t, page.body["items"].([]any), 1)
	a = ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/clear", id), map[string]any{"handle": h})
	require.EqualValues(t, 6, a.num("revision"))
	n := 0
	for rec, err := range st.History(ctx, session.SessionID(id)) {
		require.NoError(t, err)
		n++
		if rec.Revision == 3 {
			require.Len(t, rec.Snapshot.Messages, len(items)+1)
		}
	}
	require.Equal(t, 6, n)

	// The server's handle and a Go agent exclude each other.
	require.Equal(t, "held", ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/lease", id), nil).str("state"))
	_, err = st.TryAcquire(ctx, session.SessionID(id), sessionstore.AcquireOptions{Label: "go agent"})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
	ts.must(http.StatusOK, "DELETE", "/v1/handles/"+h, nil)
	w, err := st.TryAcquire(ctx, session.SessionID(id), sessionstore.AcquireOptions{Label: "go agent"})
	require.NoError(t, err)
	a = ts.must(http.StatusConflict, "POST", path("/v1/sessions/%s/handles", id), map[string]any{"holder": "test"})
	require.Equal(t, "lease_held", a.str("code"))
	require.NoError(t, w.Release(ctx))

	// Resumed, the session continues where the agent left it, and a
	// delete through the handle removes it.
	a = ts.must(http.StatusCreated, "POST", path("/v1/sessions/%s/handles", id), map[string]any{"holder": "test"})
	h = a.str("handle")
	require.EqualValues(t, 6, a.num("revision"))
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": raw[:1]})
	ts.must(http.StatusOK, "DELETE", path("/v1/sessions/%s", id), map[string]any{"handle": h})
	ts.must(http.StatusNotFound, "GET", path("/v1/sessions/%s", id), nil)
	require.Zero(t, ts.srv.Handles())
}
