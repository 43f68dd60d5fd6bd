package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Migrate the schema once, open the store, create a session and append a
// revision. (Not run: it needs a server, named here by $DATABASE_URL.)
func Example() {
	ctx := context.Background()
	dsn := os.Getenv("DATABASE_URL") // postgres://agent@db.internal/sessions
	if _, err := pgstore.Migrate(ctx, dsn); err != nil {
		log.Fatal(err)
	}
	store, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	s, err := session.New(session.Config{
		ID: sessionstore.NewID(), CreatedAt: time.Now(), Kind: session.KindPrimary,
		EnvironmentRef: session.EnvironmentRef{Provider: "k8s", ID: "agent-7", Revision: "1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	snap, _ := sessnap.Of(s)
	w, err := store.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent"})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Release(ctx) // or the lease expires LeaseTTL after the last heartbeat

	_ = s.AppendMessage(session.TextMessage(session.RoleUser, "hello", time.Now()))
	next, _ := sessnap.Of(s)
	rev, err := w.Append(ctx, w.Revision(), next)
	if err != nil {
		log.Fatal(err) // ErrLeaseLost: another machine took over; stop
	}
	fmt.Println("revision", rev)
}
