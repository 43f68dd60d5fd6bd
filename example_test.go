package sessionstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Example follows an agent's session through two lives: a first process
// creates it and works through a turn, then releases it; a second process
// takes the lease over, loads the latest revision, restores the session
// and carries on where the first left off.
func Example() {
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	snapshot := func(s *session.Session) sessnap.Snapshot {
		snap, err := sessnap.Of(s)
		check(err)
		return snap
	}

	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	// --- The first process. ---
	created := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	s, err := session.New(session.Config{
		ID: "demo", CreatedAt: created, Kind: session.KindPrimary,
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
	})
	check(err)
	check(s.AppendMessage(session.TextMessage(session.RoleUser, "Refactor the parser", created)))

	// Create writes revision 1 and returns the writer holding the lease.
	w, err := store.Create(ctx, snapshot(s), sessionstore.AcquireOptions{Label: "agent-cli"})
	check(err)
	fmt.Printf("created %s: revision %d, generation %d\n", w.ID(), w.Revision(), w.Generation())

	// Each step of the agent is a new revision, durable when Append returns.
	check(s.BeginTurn())
	check(s.AddUsage(session.Usage{InputTokens: 900, OutputTokens: 120}))
	check(s.AppendMessage(session.TextMessage(session.RoleAssistant, "Done: parser split in two.", created.Add(time.Minute))))
	rev, err := w.Append(ctx, w.Revision(), snapshot(s))
	check(err)
	check(s.EndTurn())
	rev, err = w.Append(ctx, rev, snapshot(s))
	check(err)
	fmt.Println("appended up to revision", rev)
	check(w.Release(ctx))

	// --- The second process. ---
	w2, err := store.Acquire(ctx, "demo", sessionstore.AcquireOptions{Label: "agent-cli (resumed)"})
	check(err)
	fmt.Printf("resumed: generation %d, previous lease %s\n", w2.Generation(), w2.Recovery().Previous.State)

	// Nobody else may drive it meanwhile.
	_, err = store.TryAcquire(ctx, "demo", sessionstore.AcquireOptions{Label: "intruder"})
	var held *sessionstore.LeaseHeldError
	if errors.As(err, &held) {
		fmt.Println("intruder refused: held by", held.Status.Holder.Label)
	}

	rec, err := store.Load(ctx, "demo")
	check(err)
	restored, err := rec.Session()
	check(err)
	fmt.Printf("loaded revision %d: %s, %d messages, %d run tokens\n",
		rec.Revision, restored.State(), restored.MessageCount(), restored.Usage().RunTokens())

	check(restored.AppendMessage(session.TextMessage(session.RoleUser, "Now add tests", created.Add(time.Hour))))
	check(restored.Complete())
	rev, err = w2.Append(ctx, rec.Revision, snapshot(restored))
	check(err)
	fmt.Println("appended revision", rev, "written by generation", w2.Generation())
	check(w2.Release(ctx))

	page, err := store.List(ctx, summary.Query{})
	check(err)
	for _, sum := range page.Items {
		fmt.Printf("%s %s revision %d, %d messages, lease %s\n", sum.ID, sum.State, sum.Revision, sum.MessageCount, sum.Lease.State)
	}

	// Output:
	// created demo: revision 1, generation 1
	// appended up to revision 3
	// resumed: generation 2, previous lease free
	// intruder refused: held by agent-cli (resumed)
	// loaded revision 3: idle, 2 messages, 1020 run tokens
	// appended revision 4 written by generation 2
	// demo completed revision 4, 3 messages, lease free
}

// Example_handle is the README's agent turn: a prompt, a tool call with
// its usage, the tool's result and the answer, each added in one call,
// then a resume in another life of the program and a rewind.
func Example_handle() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	check := func(_ uint64, err error) {
		if err != nil {
			panic(err)
		}
	}

	h, err := sessionstore.Open(ctx, store, "fix-tests", sessionstore.HandleOptions{})
	check(0, err)
	check(h.Add(ctx, session.TextMessage(session.RoleUser, "Fix the tests", at)))
	check(h.Add(ctx, session.Message{Role: session.RoleAssistant, Usage: &session.Usage{InputTokens: 900, OutputTokens: 40},
		Parts: []session.Part{{Type: session.PartToolCall, ToolCallID: "c1", Name: "go_test", Input: json.RawMessage(`{}`)}}}))
	check(h.Add(ctx, session.Message{Role: session.RoleTool,
		Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c1", Output: "ok  ./..."}}}))
	check(h.Add(ctx, session.TextMessage(session.RoleAssistant, "All tests pass.", at)))
	check(0, h.Close(ctx))

	// Another process, later.
	h, err = sessionstore.Open(ctx, store, "fix-tests", sessionstore.HandleOptions{})
	check(0, err)
	snap := h.Snapshot()
	fmt.Printf("revision %d: %q, %s, %d messages, %d turn, %d tool call, %d run tokens\n", h.Revision(), snap.Title, snap.State,
		len(snap.Messages), snap.Counters.Turns, snap.Counters.ToolCalls, snap.Usage.RunTokens())
	check(h.Rewind(ctx, 2))
	fmt.Printf("rewound: revision %d, %d messages, %s\n", h.Revision(), len(h.Snapshot().Messages), h.Snapshot().State)
	check(0, h.Close(ctx))

	// Output:
	// revision 5: "Fix the tests", idle, 4 messages, 1 turn, 1 tool call, 940 run tokens
	// rewound: revision 6, 2 messages, idle
}
