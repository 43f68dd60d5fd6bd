// Package usage measures what a directory store's files occupy, for the
// facade's DiskUsage (FORMAT.md "Layout"): each session's bytes by kind
// of file (its log.jsonl, archive/, forensic/, blobs/, the rest), the
// bytes it shares with other sessions through hard links and those it
// adds to the sessions counted before it, and what the temporary and
// trash directories at the root hold. Its Dir counts the files under a
// directory for the other rooms (verify's note on forensic/).
//
//	d := usage.New(root, gate)
//	u, once, err := d.SessionUsage(ctx, id, seen)
//
// It must never open a file for reading or writing, take a lease, or
// change anything: it reads directory entries only, and its figures are
// apparent sizes, a moment's on a live store.
package usage
