package sessiontest

import (
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
