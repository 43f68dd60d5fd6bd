// Package summary is the read model of sessions: the Summary a listing
// shows, its projection from a snapshot (Project), queries with filter,
// order and keyset cursor (Query, Page), level-triggered change events
// (Change), and an in-memory Index that answers queries and feeds
// subscribers. It knows nothing about files: adapters feed an Index from
// whatever they store.
//
// # Usage
//
//	ix := summary.NewIndex()
//	ix.Put(summary.Project(&snap, rev, gen, recordTime)) // on every append
//	ix.Delete(id)                                          // on delete
//
//	page, err := ix.Query(summary.Query{States: []session.State{session.StateRunning}, Limit: 20})
//	mine, err := ix.Query(summary.Query{Labels: map[string]string{"team": "tools"}, Project: "/src/app", ProjectTree: true})
//	next, err := ix.Query(summary.Query{States: []session.State{session.StateRunning}, Limit: 20, Cursor: page.Next})
//
//	sub := ix.Subscribe(ctx) // the current state first, then changes
//	defer sub.Close()
//	for c := range sub.C() {
//		// c.Deleted, c.Unreadable (it exists but cannot be read), or
//		// c.Summary is c.ID's latest summary
//		mirror.Apply(c) // another Index that follows this one
//	}
//
// Filters are ANDed: states and kinds match any of those listed, labels
// match when the session carries every one with the same value, and a
// project matches exactly or, with ProjectTree, with its subdirectories.
//
// Paging with a cursor returns every session not modified during the
// paging exactly once: a cursor is the key (time and ID) of the last item
// returned, and the next page starts strictly after it. A cursor is bound
// to its query's order and filter; using it with another is ErrBadCursor.
package summary
