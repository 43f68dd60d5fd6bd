// Package history reads the snapshots of a session's history as the
// adapters' CreateHistory takes them (sessionstore.HistoryCreator:
// jsonlstore, pgstore), with the rules every one of them holds a history
// to, stated once: a history has a first snapshot, which names the
// session; every other snapshot is of the same session; the sequence's own
// errors end it.
//
//	h := history.Pull(snaps)
//	defer h.Stop()
//	first, err := h.First()
//	… create the session first.ID with revision 1 …
//	for {
//		snap, more, err := h.Next()
//		… on an error nothing is created; without more, publish …
//	}
//
// The snapshots are pulled one at a time, as the records are written: a
// history need not fit in memory.
package history
