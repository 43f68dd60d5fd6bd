// Package blob owns the rules of part content kept out of line, for every
// adapter (memstore in memory, pgstore in a table, jsonlstore in files of
// its own) and command:
//
//   - the address: the SHA-256 of the content, 64 lower-case hex digits
//     (Hash, ValidHash; HashReader for content that streams);
//   - the threshold from which content goes out of line (Threshold), and
//     the Externalizer that sends it, and a full record's pages
//     (internal/record), to the adapter's store;
//   - the check of content against its reference (Check, CheckHash), with
//     one wording of what does not match (ErrMismatch: SizeMismatch,
//     LongerThan, HashMismatch), and its fetch from a source (Fetch);
//   - the check of the references a writer's snapshot brings with it,
//     which must name content the session holds (Arrivals, Refuse).
//
// It keeps no content and does no I/O of its own: where content lives is
// the adapter's (jsonlstore's blob files, FORMAT.md "Blobs").
//
//	ext := &blob.Externalizer{Threshold: blob.Threshold(opts.BlobThreshold), Put: put}
//	…
//	if err := arrivals.Check(id, snap.Messages, blob.Held(held).Size); err != nil { … }
//	if err := blob.Check(ref, content); err != nil { … } // wraps ErrMismatch
package blob
