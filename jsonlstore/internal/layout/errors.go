package layout

import "github.com/sessionstore/sessionstore/jsonlstore/maintenance"

// Sentinel errors the rooms of the store return: package maintenance's,
// which jsonlstore exports under the same names and documents.
var (
	// ErrUnsafeRoot: a root another local user could change.
	ErrUnsafeRoot = maintenance.ErrUnsafeRoot
	// ErrNoLog: a session directory without a usable log.
	ErrNoLog = maintenance.ErrNoLog
	// ErrLinkedLog: a log with more than one hard link, never written to.
	ErrLinkedLog = maintenance.ErrLinkedLog
	// ErrBackupInsideStore: a backup destination inside the store.
	ErrBackupInsideStore = maintenance.ErrBackupInsideStore
	// ErrBlob: a blob missing, damaged or of the wrong content.
	ErrBlob = maintenance.ErrBlob
)
