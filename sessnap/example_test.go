package sessnap_test

import (
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Example shows a session captured with Of, encoded, decoded and restored
// into an equivalent session that continues where the first left off.
func Example() {
	created := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	s, _ := session.New(session.Config{
		ID: "01JDEXAMPLE", CreatedAt: created, Kind: session.KindPrimary,
		Limits:         session.Limits{MaxRunTokens: 10_000},
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
	})
	_ = s.AppendMessage(session.TextMessage(session.RoleUser, "List the files", created))
	_ = s.BeginTurn()
	_ = s.AddUsage(session.Usage{InputTokens: 900, OutputTokens: 120})
	_ = s.PauseForApproval(session.PendingAsk{ID: "ask-1", ToolCallID: "call-1", Tool: "bash", Reason: "runs ls", AskedAt: created})

	snap, _ := sessnap.Of(s)
	data, _ := sessnap.Marshal(snap)

	decoded, _ := sessnap.Unmarshal(data)
	restored, err := decoded.Restore()
	if err != nil {
		panic(err)
	}
	ask, _ := restored.PendingAsk()
	fmt.Println(restored.State(), ask.Tool, restored.Usage().RunTokens())

	_ = restored.ResolveApproval(true)
	fmt.Println(restored.State(), restored.Counters().Approvals)
	// Output:
	// awaiting bash 1020
	// running 1
}
