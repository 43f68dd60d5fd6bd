package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// appendIn runs sessions append in this process with stdin.
func appendIn(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := appendFrom(context.Background(), append([]string{"--dir", dir}, args...), strings.NewReader(stdin), &out, &errb)
	return result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

func TestNewAppendLabel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new-store")
	r := inProcess(t, "--dir", dir, "new", "--title", "From a script", "--label", "team=tools", "--id", "scripted")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "scripted\n", r.Stdout)
	r = inProcess(t, "--dir", dir, "new")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	minted := strings.TrimSpace(r.Stdout)
	require.NoError(t, sessionstore.ValidateID(session.SessionID(minted)))
	r = inProcess(t, "--dir", dir, "new", "--id", "scripted")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "already exists")

	r = appendIn(t, dir, `{"role":"user","parts":[{"type":"text","text":"hello"}]}`+"\n\n"+
		`{"role":"assistant","parts":[{"type":"text","text":"hi"}],"created_at":"2026-01-02T03:04:05Z"}`+"\n", "scripted")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "scripted revision 2: 2 messages appended\n", r.Stdout)

	// A bad line names itself, and nothing is written.
	for _, bad := range []struct{ in, want string }{
		{`{"role":"user","parts":[{"type":"text","text":"ok"}]}` + "\n" + `{"role":"user","parts":[],"x":1}`, `line 2: malformed snapshot: message: json: unknown field "x"`},
		{`{"role":"robot","parts":[{"type":"text","text":"ok"}]}`, "line 1: invalid snapshot"},
		{`not json`, "line 1: malformed"},
		{``, "no message on standard input"},
	} {
		r = appendIn(t, dir, bad.in, "scripted")
		require.Equal(t, exitFail, r.Code, bad.in)
		require.Contains(t, r.Stderr, bad.want)
	}
	r = inProcess(t, "--dir", dir, "label", "scripted", "x=1", "--rm", "team")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	require.Equal(t, "scripted revision 3: 1 label\n", r.Stdout)
	r = inProcess(t, "--dir", dir, "label", "scripted")
	require.Equal(t, exitUsage, r.Code)

	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	rec, err := st.Load(context.Background(), "scripted")
	require.NoError(t, err)
	require.Equal(t, uint64(3), rec.Revision, "the refused appends wrote nothing")
	require.Len(t, rec.Snapshot.Messages, 2)
	require.False(t, rec.Snapshot.Messages[0].CreatedAt.IsZero(), "created_at is now when absent")
	require.Equal(t, "2026-01-02T03:04:05Z", rec.Snapshot.Messages[1].CreatedAt.Format("2006-01-02T15:04:05Z07:00"))
	require.Equal(t, map[string]string{"x": "1"}, rec.Snapshot.Labels)
	require.Equal(t, "From a script", rec.Snapshot.Title)

	// A held session is refused, naming the holder.
	w, err := st.TryAcquire(context.Background(), "scripted", sessionstore.AcquireOptions{Label: "busy-agent"})
	require.NoError(t, err)
	r = appendIn(t, dir, `{"role":"user","parts":[{"type":"text","text":"x"}]}`, "scripted")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "held by busy-agent")
	r = inProcess(t, "--dir", dir, "label", "scripted", "y=2")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "held by busy-agent")
	require.NoError(t, w.Release(context.Background()))
}

// TestServe runs the built command: it prints where it listens, serves
// on a socket of mode 0600, answers, and on SIGTERM releases the leases
// it holds and removes its socket.
func TestServe(t *testing.T) {
	base, err := os.MkdirTemp("", "serve") //nolint:usetesting // a unix socket path is at most 104 bytes on darwin; t.TempDir's can be longer
	require.NoError(t, err)
	defer func() { _ = os.RemoveAll(base) }()
	dir := filepath.Join(base, "st")
	require.Equal(t, exitOK, inProcess(t, "--dir", dir, "new", "--id", "s1").Code)
	socket := filepath.Join(base, "s.sock")
	ctx, cancel := clitest.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "sessions"), "--dir", dir, "serve", "--socket", socket)
	cmd.Env = clitest.CleanEnv(t)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	require.Equal(t, "listening on unix:"+socket+"\n", line)
	fi, err := os.Stat(socket)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer c.CloseIdleConnections()
	resp, err := c.Post("http://sessions/v1/sessions/s1/handles", "application/json", strings.NewReader(`{"holder":"test"}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var h struct{ Handle string }
	require.NoError(t, json.Unmarshal(body, &h))
	resp, err = c.Post("http://sessions/v1/sessions/s1/items", "application/json", strings.NewReader(`{"handle":"`+h.Handle+`","items":[{"role":"user","content":"over the socket"}]}`))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := inProcess(t, "--dir", dir, "lease", "s1")
	require.Contains(t, r.Stdout, "test (client pid")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), stderr.String())
	_, err = os.Stat(socket)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket goes with the server")
	r = inProcess(t, "--dir", dir, "show", "s1", "--format", "text")
	require.Contains(t, r.Stdout, "over the socket")
	r = inProcess(t, "--dir", dir, "lease", "s1", "--json")
	require.Contains(t, r.Stdout, `"state": "free"`, "the server released the lease it held")
}

// lockedBuffer is a command's stderr that a test may read while the
// command writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
