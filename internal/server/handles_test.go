package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/summary"
)

// serveOne answers one request with s's handler, in process (no
// network: a synctest bubble's goroutines block on nothing else).
func serveOne(s *Server, method, target, body string) (int, map[string]any) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(context.Background(), method, target, strings.NewReader(body))
	req = req.WithContext(context.WithValue(req.Context(), peerKey{}, peer{unix: true, uid: s.uid, pid: 1}))
	s.http.Handler.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

// TestIdleHandleExpires: a handle whose client shows no sign of life for
// longer than the grace is ended and its lease released; a request or a
// heartbeat is a sign of life; a handle with a request in progress never
// expires; the client of an expired handle learns so, with the lease's
// new holder.
func TestIdleHandleExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New(memstore.Options{})
		defer func() { require.NoError(t, st.Close()) }()
		const grace = 10 * time.Second
		srv := New(st, Options{Grace: grace})
		defer func() { require.NoError(t, srv.Shutdown(ctx)) }()

		code, a := serveOne(srv, "POST", "/v1/sessions", `{"id":"idle"}`)
		require.Equal(t, http.StatusCreated, code, a)
		idle := a["handle"].(string)
		code, a = serveOne(srv, "POST", "/v1/sessions", `{"id":"busy"}`)
		require.Equal(t, http.StatusCreated, code, a)
		_, busyDone, _, ok := srv.handles.use(a["handle"].(string)) // a request in progress, for a long time
		require.True(t, ok)

		time.Sleep(9 * time.Second)
		synctest.Wait()
		require.Equal(t, 2, srv.Handles())
		code, a = serveOne(srv, "POST", "/v1/handles/"+idle+"/heartbeat", "")
		require.Equal(t, http.StatusOK, code, a)

		time.Sleep(9 * time.Second) // 9s after the heartbeat
		synctest.Wait()
		require.Equal(t, 2, srv.Handles(), "a heartbeat is a sign of life")

		time.Sleep(4 * time.Second) // 13s after it
		synctest.Wait()
		require.Equal(t, 1, srv.Handles(), "the idle handle expired")
		ls, err := st.Lease(ctx, "idle")
		require.NoError(t, err)
		require.Equal(t, summary.LeaseFree, ls.State, "and its lease was released")

		// Another holder takes the session; the old handle's client learns
		// its handle expired, and who holds the session now.
		w, err := st.TryAcquire(ctx, "idle", sessionstore.AcquireOptions{Label: "newcomer"})
		require.NoError(t, err)
		code, a = serveOne(srv, "POST", "/v1/sessions/idle/items", `{"handle":"`+idle+`","items":[{"content":"late"}]}`)
		require.Equal(t, http.StatusConflict, code, a)
		require.Equal(t, "handle_expired", a["code"])
		require.Equal(t, "newcomer", a["lease"].(map[string]any)["holder"].(map[string]any)["label"])
		require.NoError(t, w.Release(ctx))

		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, 1, srv.Handles(), "a handle in use never expires")
		busyDone()
		time.Sleep(grace + grace/4 + time.Second)
		synctest.Wait()
		require.Zero(t, srv.Handles(), "and expires once idle past the grace")

		// Tombstones go after a while: the token is then unknown.
		time.Sleep(11 * grace)
		synctest.Wait()
		code, a = serveOne(srv, "POST", "/v1/sessions/idle/items", `{"handle":"`+idle+`","items":[]}`)
		require.Equal(t, http.StatusNotFound, code, a)
		require.Equal(t, "unknown_handle", a["code"])
	})
}
