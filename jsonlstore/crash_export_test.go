package jsonlstore

import (
	"testing"

	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/session"
)

// KillHolder makes a holder of session id in the store at dir die without
// releasing: a helper process (helper_test.go, procModeHold) takes the
// lease and is killed with SIGKILL once it holds it. It returns the dead
// holder's generation. It is the conformance suite's Harness.Crash
// (conformance_test.go, in package jsonlstore_test, which this file
// exports it to).
func KillHolder(t *testing.T, dir string, id session.SessionID) uint64 {
	t.Helper()
	c := startProc(t, procModeHold, procEnv(dir, id, 0)...)
	gen := proctest.Uint(t, proctest.Fields(t, c.Next(t), "held"), "gen")
	c.Kill(t)
	return gen
}
