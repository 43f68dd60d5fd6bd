package jsonlstore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Example shows an agent's life on disk: create a session, append
// revisions (each durable when Append returns), release; a second holder
// (another process, in real life) acquires with a higher generation,
// restores the session from the latest revision and finishes it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sessionstore-example")
	defer os.RemoveAll(dir)
	store, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	s, _ := session.New(session.Config{
		ID: sessionstore.NewID(), CreatedAt: time.Now(), Kind: session.KindPrimary,
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
	})
	snap, _ := sessnap.Of(s)
	w, err := store.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
	if err != nil {
		panic(err)
	}
	_ = s.AppendMessage(session.TextMessage(session.RoleUser, "Summarise README.md", time.Now()))
	_ = s.BeginTurn()
	snap, _ = sessnap.Of(s)
	rev, _ := w.Append(ctx, 1, snap)
	fmt.Println("appended revision", rev, "generation", w.Generation())
	_ = w.Release(ctx)

	w2, err := store.Acquire(ctx, s.ID(), sessionstore.AcquireOptions{Label: "resumer"})
	if err != nil {
		panic(err)
	}
	defer w2.Release(ctx)
	rec, _ := store.Load(ctx, s.ID())
	resumed, _ := rec.Session()
	_ = resumed.EndTurn()
	_ = resumed.Complete()
	snap, _ = sessnap.Of(resumed)
	rev, _ = w2.Append(ctx, rec.Revision, snap)
	fmt.Println("previous holder:", w2.Recovery().Previous.State, "generation", w2.Generation())
	fmt.Println("revision", rev, "state", resumed.State())
	// Output:
	// appended revision 2 generation 1
	// previous holder: free generation 2
	// revision 3 state completed
}
