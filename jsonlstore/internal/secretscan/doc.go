// Package secretscan owns the scan of what a file store already holds
// for secrets (`sessions scan`, sessionstore.Scan through the facade's
// Store.ScanSecrets): every revision of every live session's log and
// archive segments, the blobs and pages they reference, the forensic
// copies a repair set aside, and the retired sessions' packs (each
// unpacked into memory and scanned the same way). It reports where a
// secret is (session, revision, message, part, field, and the kind of
// file), never the secret.
//
// It reads what the store holds once, and scans each distinct piece of
// content once:
//
//   - each revision's stored snapshot is rebuilt from its record (a delta
//     applied to the one before); its messages are compared with the
//     revision before's, at the same place, and only those that differ
//     are looked at; a message or page seen before (by its SHA-256, in
//     this session) is not scanned again, nor are the snapshot's other
//     members when they are unchanged;
//   - a blob is looked at once per store, its verdict remembered by its
//     file (vfs.Identity: a fork's linked blobs are one file; by session
//     and hash where the file system does not say, and in a retired
//     session unpacked into memory), and by its hash in the session, so
//     that naming it again costs not even an open; a page is read once
//     per session;
//   - a blob is looked at through the worker's blobfile.Peeker: read and
//     decompressed into buffers the worker reuses, its size checked, its
//     SHA-256 not. The scan looks for secrets in the bytes the file holds,
//     whatever they are: a secret there is found whether or not the bytes
//     are the content the name says, and the scan gives none of them back
//     as content. Only sharing a verdict needed the hash (a damaged copy
//     in one session must not be vouched for by a sound one in another),
//     and the verdict is shared by file, not by hash. A damaged blob is
//     verify's to report; one that holds a secret is read again, checked,
//     to say where the secret is (a CorruptionError when it is damaged);
//   - what a message that holds a secret names out of line is read
//     checked, once per session however many messages name it, and held
//     for the session's scan;
//   - the scan of bytes is the Redactor's (redact.Redactor.Find): its
//     prefilter of the rules' literal keywords, a regular expression only
//     near a keyword. Only a message whose bytes (or content kept out of
//     line) hold a secret is decoded, to say in which part and field.
//
// Sessions are scanned in parallel (one worker per processor), their
// findings given in session order.
package secretscan
