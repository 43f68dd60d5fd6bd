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
//   - a blob or page is read and scanned once per store (by its hash: a
//     fork's shared blobs count once), its verdict remembered;
//   - the scan of bytes is the Redactor's (redact.Redactor.Find): its
//     prefilter of the rules' literal keywords, a regular expression only
//     near a keyword. Only a message whose bytes (or content kept out of
//     line) hold a secret is decoded, to say in which part and field.
//
// Sessions are scanned in parallel (one worker per processor), their
// findings given in session order.
package secretscan
