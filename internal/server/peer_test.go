package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/unprivtest"
	"github.com/sessionstore/sessionstore/summary"
)

// TestOtherUsersRefused: a process of another user cannot use the
// server. The socket's mode (0600) refuses it at connect; and where the
// mode would let it in (a socket made 0666 here), the server asks the
// kernel who connected and answers 403, writing nothing. Run as root, it
// runs itself again as another user (unprivtest), which does the
// connecting.
func TestOtherUsersRefused(t *testing.T) {
	if unprivtest.Child() {
		_, err := net.Dial("unix", os.Getenv("SERVER_TEST_CLOSED_SOCKET")) //nolint:gosec // G704: the socket the parent test made, passed in the environment
		require.True(t, errors.Is(err, syscall.EACCES), "the 0600 socket refuses another user: %v", err)
		c := unixClient(os.Getenv("SERVER_TEST_OPEN_SOCKET"))
		defer c.CloseIdleConnections()
		for _, req := range []struct{ method, body string }{{"GET", ""}, {"POST", "{}"}} {
			r, err := http.NewRequest(req.method, "http://sessions/v1/sessions", strings.NewReader(req.body))
			require.NoError(t, err)
			resp, err := c.Do(r)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
			require.Contains(t, string(body), "runs as uid "+strconv.Itoa(os.Getuid()))
		}
		return
	}
	if !unprivtest.Root() {
		t.Skip("needs root, to connect as another user")
	}
	dir := unprivtest.OwnedDir(t, 0)
	st := openStore(t, filepath.Join(dir, "st"))
	ts := serveStore(t, dir, st, Options{})
	open := filepath.Join(dir, "open.sock")
	l, err := ListenUnix(context.Background(), open)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(open, 0o666))
	go func() { _ = ts.srv.ServeUnix(l) }() // Shutdown closes it with the other
	unprivtest.Run(t, unprivtest.Nobody, []string{"SERVER_TEST_CLOSED_SOCKET=" + ts.socket, "SERVER_TEST_OPEN_SOCKET=" + open}, "TestOtherUsersRefused")
	page, err := st.List(context.Background(), summary.Query{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "another user's create wrote nothing")
	ts.must(http.StatusOK, "GET", "/v1/health", nil) // this user is served
}
