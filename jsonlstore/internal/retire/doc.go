// Package retire is a directory store's retired area: sessions moved out
// of the live set, each kept whole in one compressed, checksummed pack,
// listed and searched apart from the live ones, and restored byte for
// byte. It owns the pack format, the journal of retires and restores,
// the retention policy file, which live sessions a retirement takes
// (RetireIdle: named, idle long enough, labelled, or by the policy; never
// a held one) and the search of retired sessions (Search). The facade
// gives it the live set (Live: listings, summaries, the search index to
// tell) and its reads of a session (History). It must never write a live
// session's files other than by renaming its directory away under the
// session's lease lock, and never deletes a pack but in Remove.
//
// # Layout
//
//	ROOT/
//	  .retention.json                 the retention policy (ReadPolicy), written by people
//	  .retired/                       0700
//	    <id>.tar.zst                  0600, a retired session: zstd(tar(retired.json, its files))
//	    .pack-<id>-<random>.tmp       a pack being written (swept by the next retire of <id>)
//	    journal.jsonl                 0600, append-only: one framed line per retire, restore, rm
//	    lock                          0600, flock target: one retire or restore at a time
//
// # Guarantees
//
// A session is live (ROOT/<id>/), retired (.retired/<id>.tar.zst), or for
// a moment both with the same history; never neither. Retire writes and
// syncs the pack, reads it back against the session's files, publishes it
// by a rename and syncs the area before the live directory is renamed to
// a trash name; Restore writes and syncs a temporary session directory
// from a pack it checks member by member, publishes it with a rename that
// never replaces, and only then removes the pack. A session whose lease a
// live holder has (its lease.lock flocked) is never retired: Retire holds
// that lock itself from before it reads a byte to after the live copy is
// gone. Only Remove deletes a pack.
//
// # Usage
//
//	a := retire.New(root, locker)
//	rs, err := a.Retire(ctx, id, sum, "older than 720h0m0s")
//	rs, err = a.Restore(ctx, id)
//	for rs, err := range a.List(ctx) { … }
package retire
