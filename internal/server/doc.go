// Package server serves a store to agents in any language: HTTP and JSON
// over a unix socket (mode 0600, only this user's processes, checked by
// the kernel's peer credentials), or over loopback TCP with a bearer
// token. API.md at the repository's root documents every endpoint; the
// clients in clients/ speak it.
//
// The server is one more process under the store's rules. A client that
// writes holds a handle: a Writer (writer.go) that holds the session's
// lease for it, so a Go agent holding the session and a handle of the
// server exclude each other as any two writers do. Every write names its
// handle; a handle ends when its client releases it, deletes the
// session, loses the lease (409, with the lease as it is now) or shows
// no sign of life for longer than Options.Grace (handles.go), when the
// server releases the lease for others.
//
// An acknowledged write is durable: the server answers after the store's
// Append returned, so a server killed at any point loses no write it
// acknowledged, and the next holder recovers what it left (the store's
// own recovery).
//
// Messages are the store's (the form `sessions show` prints); items are
// the OpenAI Agents SDK's, stored one per message so that they come back
// exactly and their text is searchable (items.go).
//
//	st, _ := jsonlstore.Open(dir, jsonlstore.Options{Search: fts.New()})
//	srv := server.New(st, server.Options{})
//	l, _ := server.ListenUnix(ctx, path)
//	go srv.ServeUnix(l)
//	defer srv.Shutdown(ctx)
package server
