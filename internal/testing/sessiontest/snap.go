package sessiontest

import (
	"strings"
	"testing"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Snap is the one snapshot builder of the tests: the snapshot of s, or
// tb fails. Build the session with New, InState, Titled or by hand:
//
//	w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.InState("a", session.StateIdle)), opts)
func Snap(tb testing.TB, s *session.Session) sessnap.Snapshot {
	tb.Helper()
	snap, err := sessnap.Of(s)
	if err != nil {
		tb.Fatalf("sessiontest: snapshot of %s: %v", s.ID(), err)
	}
	return snap
}

// Titled returns InState(id, session.StateIdle) titled title (a generated
// title), or panics: revisions that differ only in their title, so that
// each one is identifiable.
func Titled(id, title string) *session.Session {
	s := InState(id, session.StateIdle)
	must(s.SetTitle(title, session.TitleGenerated))
	return s
}

// WideToolCall returns an assistant message whose one tool call's input is
// a JSON string of n bytes, and that input. No store keeps a tool call's
// input out of line, so a revision holding it has a record larger than n:
// the way tests write records above a small record cap.
func WideToolCall(n int) (session.Message, string) {
	input := `"` + strings.Repeat("y", n) + `"`
	return session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "write", Input: []byte(input)}}}, input
}
