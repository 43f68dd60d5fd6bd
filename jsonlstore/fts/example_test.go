package fts_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Example opens a store with the search index and searches what an
// agent wrote through a store opened without it (an agent that never
// searches, and links no SQLite).
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fts-example")
	defer os.RemoveAll(dir)

	// The agent: no search index.
	agent, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		panic(err)
	}
	s, _ := session.New(session.Config{
		ID: "example", CreatedAt: time.Now(), Kind: session.KindPrimary,
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
	})
	_ = s.AppendMessage(session.TextMessage(session.RoleUser, "Fix the flaky test in parse", time.Now()))
	snap, _ := sessnap.Of(s)
	w, err := agent.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
	if err != nil {
		panic(err)
	}
	_ = w.Release(ctx)
	_, err = agent.Search(ctx, sessionstore.SearchQuery{Text: "flaky"})
	fmt.Println("without the index:", errors.Is(err, jsonlstore.ErrNoSearch))
	_ = agent.Close()

	// A tool that searches: the same root, opened with it.
	store, err := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	res, err := store.Search(ctx, sessionstore.SearchQuery{Text: "flaky test"})
	if err != nil {
		panic(err)
	}
	for _, h := range res.Hits {
		fmt.Println(h.ID, "message", h.Message, "revision", h.Revision)
	}
	// Output:
	// without the index: true
	// example message 0 revision 1
}
