package maintenance

import "github.com/sessionstore/sessionstore/session"

// RedactReport says what the redaction of one stored session did
// (jsonlstore's Store.Redact): what it rewrote, what it removed, and what
// it could not reach.
type RedactReport struct {
	ID session.SessionID `json:"id"`
	// Skipped is why the session was not redacted ("" if it was): its
	// lease is held.
	Skipped string `json:"skipped,omitempty"`
	// Revisions is how many revisions the session has; Rewritten how many
	// of them were rewritten (0 when none held a secret).
	Revisions int64 `json:"revisions"`
	Rewritten int64 `json:"rewritten"`
	// Secrets counts the secrets replaced, by rule: each distinct message
	// (or title, error, pending approval) once, however many revisions
	// hold it.
	Secrets map[string]int `json:"secrets,omitempty"`
	// Blobs is how many new blobs and pages hold redacted content.
	Blobs int `json:"blobs,omitempty"`
	// Purged lists the files, relative to the store's root, that held
	// the old history and were removed or rewritten: the old log,
	// archive segments, summary.json, forensic copies, blobs.
	Purged []string `json:"purged,omitempty"`
	// Unarchived is true when archived revisions came back into the log
	// (a later compaction archives them again).
	Unarchived bool `json:"unarchived,omitempty"`
	// Catalog and Search report that the listing catalog and the search
	// index were rewritten as new files.
	Catalog bool `json:"catalog,omitempty"`
	Search  bool `json:"search,omitempty"`
	// NotPurged says what redaction could not reach, for the user to
	// deal with: copies outside the store (backups, exports, retired
	// packs), and the store's own caches it failed to rewrite.
	NotPurged []string `json:"not_purged,omitempty"`
}
