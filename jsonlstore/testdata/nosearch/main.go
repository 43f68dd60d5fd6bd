// Command nosearch opens a directory store without the search index and
// appends, as an agent that never searches does: TestOpenLinksNoSQLite
// checks that it links no SQLite.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

func main() {
	if err := run(context.Background(), os.Args[1]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dir string) error {
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := session.New(session.Config{
		ID: sessionstore.NewID(), CreatedAt: time.Now(), Kind: session.KindPrimary,
		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
	})
	if err != nil {
		return err
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		return err
	}
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "nosearch"})
	if err != nil {
		return err
	}
	if err := s.AppendMessage(session.TextMessage(session.RoleUser, "Fix the tests", time.Now())); err != nil {
		return err
	}
	if snap, err = sessnap.Of(s); err != nil {
		return err
	}
	if _, err := w.Append(ctx, w.Revision(), snap); err != nil {
		return err
	}
	return w.Release(ctx)
}
