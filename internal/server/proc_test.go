package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
)

// The helper modes of a child process:
//
//   - serve: a server of the store in $SERVER_TEST_DIR on the socket
//     $SERVER_TEST_SOCKET; it prints "ready", serves until its stdin
//     closes, and with $SERVER_TEST_KILL=POINT:N kills itself with
//     SIGKILL the Nth time a write reaches POINT (Options.Hooks).
//   - hold: a Go agent that takes session $SERVER_TEST_ID's lease at
//     once: it prints "held" and holds it until its stdin closes, or
//     "refused pid=N" naming the holder's process.
func runHelper(mode string) error {
	ctx := context.Background()
	st, err := jsonlstore.Open(os.Getenv("SERVER_TEST_DIR"), jsonlstore.Options{Search: fts.New()})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	stdin := bufio.NewReader(os.Stdin)
	switch mode {
	case "serve":
		opts := Options{}
		if spec := os.Getenv("SERVER_TEST_KILL"); spec != "" {
			point, n, _ := strings.Cut(spec, ":")
			at, err := strconv.Atoi(n)
			if err != nil {
				return err
			}
			hits := 0
			opts.Hooks = func(p string) {
				if p != point {
					return
				}
				if hits++; hits == at {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // SIGKILL is on its way
				}
			}
		}
		srv := New(st, opts)
		l, err := ListenUnix(ctx, os.Getenv("SERVER_TEST_SOCKET"))
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- srv.ServeUnix(l) }()
		fmt.Println("ready")
		_, _ = stdin.ReadString('\n')
		if err := srv.Shutdown(ctx); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case "hold":
		w, err := st.TryAcquire(ctx, session.SessionID(os.Getenv("SERVER_TEST_ID")), sessionstore.AcquireOptions{Label: "go-agent"})
		var he *sessionstore.LeaseHeldError
		if errors.As(err, &he) {
			fmt.Printf("refused pid=%d\n", he.Status.Holder.PID)
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Println("held")
		_, _ = stdin.ReadString('\n')
		return w.Release(ctx)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// newSession creates a session in the store at dir, its lease released.
func newSession(t *testing.T, st sessionstore.Store) session.SessionID {
	t.Helper()
	ctx := context.Background()
	w, err := Create(ctx, st, CreateOptions{}, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	return w.ID()
}

// TestExcludesAGoAgent: a Go agent holding a session in another process
// and a handle of the server exclude each other, both ways, as any two
// writers do.
func TestExcludesAGoAgent(t *testing.T) {
	dir := shortTemp(t)
	stdir := filepath.Join(dir, "st")
	st := openStore(t, stdir)
	id := newSession(t, st)
	ts := serveStore(t, dir, st, Options{})
	hold := func() *proctest.Child {
		return proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "hold", Env: []string{"SERVER_TEST_DIR=" + stdir, "SERVER_TEST_ID=" + string(id)}})
	}

	agent := hold()
	require.Equal(t, "held", agent.Next(t))
	a := ts.must(http.StatusConflict, "POST", path("/v1/sessions/%s/handles", id), map[string]any{})
	require.Equal(t, "lease_held", a.str("code"))
	holder := a.body["lease"].(map[string]any)["holder"].(map[string]any)
	require.Equal(t, json.Number(strconv.Itoa(agent.PID())), holder["pid"], "the answer names the agent's process")
	require.Equal(t, "go-agent", holder["label"])
	agent.Stop(t)

	a = ts.must(http.StatusCreated, "POST", path("/v1/sessions/%s/handles", id), map[string]any{"holder": "py"})
	h := a.str("handle")
	other := hold()
	require.Equal(t, fmt.Sprintf("refused pid=%d", os.Getpid()), other.Next(t), "the agent is refused while the server's handle holds the session")
	other.Stop(t)

	ts.must(http.StatusOK, "DELETE", "/v1/handles/"+h, nil)
	again := hold()
	require.Equal(t, "held", again.Next(t), "a released handle frees the session")
	again.Stop(t)
}

// TestKillLoopLosesNoAcknowledgedMessage kills the server process with
// SIGKILL at every point of an append (before the store's Append, after
// it returned, after the answer was written but not sent), the Nth time
// for N = 1…SERVER_KILL_ROUNDS, while a client appends one message a
// request. Every acknowledged message is in the store afterwards, in
// order, and exactly the one in flight is there too when the kill came
// after the store's Append returned (it is durable, unacknowledged); the
// next server resumes the session the dead one held.
func TestKillLoopLosesNoAcknowledgedMessage(t *testing.T) {
	dir := shortTemp(t)
	stdir := filepath.Join(dir, "st")
	socket := filepath.Join(dir, "s.sock")
	setup, err := jsonlstore.Open(stdir, jsonlstore.Options{Search: fts.New()})
	require.NoError(t, err)
	id := newSession(t, setup)
	require.NoError(t, setup.Close())

	rounds := proctest.EnvInt(t, "SERVER_KILL_ROUNDS", 4)
	stored := []string{} // what the store must hold, in order
	round := 0
	for _, point := range []string{"append", "appended", "acknowledged"} {
		for n := 1; n <= rounds; n++ {
			child := proctest.Start(t, proctest.Cmd{ModeEnv: modeEnv, Mode: "serve", Env: []string{
				"SERVER_TEST_DIR=" + stdir, "SERVER_TEST_SOCKET=" + socket, fmt.Sprintf("SERVER_TEST_KILL=%s:%d", point, n),
			}})
			require.Equal(t, "ready", child.Next(t))
			c := unixClient(socket)
			h := resumeOver(t, c, id)
			var inflight string
			for i := 0; inflight == ""; i++ {
				text := fmt.Sprintf("round %d (%s:%d) message %d", round, point, n, i)
				body, _ := json.Marshal(map[string]any{"handle": h, "items": []any{map[string]any{"role": "user", "content": text}}})
				resp, err := c.Post("http://sessions/v1/sessions/"+string(id)+"/items", "application/json", bytes.NewReader(body))
				if err != nil {
					inflight = text
					break
				}
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusOK, resp.StatusCode)
				stored = append(stored, text)
			}
			c.CloseIdleConnections()
			requireKilled(t, child)
			if point != "append" {
				stored = append(stored, inflight)
			}
			requireConversation(t, stdir, id, stored)
			round++
		}
	}
	// Per round, N-1 acknowledged, and the one in flight unless killed before the store saw it.
	require.Len(t, stored, 3*rounds*(rounds+1)/2-rounds)
}

func resumeOver(t *testing.T, c *http.Client, id session.SessionID) string {
	t.Helper()
	resp, err := c.Post("http://sessions/v1/sessions/"+string(id)+"/handles", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var a struct{ Handle string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return a.Handle
}

// requireKilled waits for child, which must have died of SIGKILL.
func requireKilled(t *testing.T, child *proctest.Child) {
	t.Helper()
	err := child.Wait(t)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the server died of SIGKILL: %v", err)
}

// requireConversation opens the store as a new process would and
// requires session id's conversation to be want's texts, and the store
// to verify.
func requireConversation(t *testing.T, dir string, id session.SessionID, want []string) {
	t.Helper()
	ctx := context.Background()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	rec, err := st.Load(ctx, id)
	require.NoError(t, err)
	got := make([]string, len(rec.Snapshot.Messages))
	for i, m := range rec.Snapshot.Messages {
		got[i] = m.Parts[0].Text
	}
	require.Equal(t, want, got)
	rep, err := sessionstore.Verify(ctx, st)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
}
