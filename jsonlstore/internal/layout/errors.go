package layout

import "errors"

// Sentinel errors the rooms of the store return. jsonlstore exports each
// under the same name (the same value, so errors.Is holds either way) and
// documents it there.
var (
	// ErrUnsafeRoot is jsonlstore.ErrUnsafeRoot: a root another local user
	// could change.
	ErrUnsafeRoot = errors.New("jsonlstore: unsafe store root")
	// ErrNoLog is jsonlstore.ErrNoLog: a session directory without a
	// usable log.
	ErrNoLog = errors.New("jsonlstore: no usable log")
	// ErrLinkedLog is jsonlstore.ErrLinkedLog: a log with more than one
	// hard link, never written to.
	ErrLinkedLog = errors.New("jsonlstore: log has more than one hard link")
	// ErrBackupInsideStore is jsonlstore.ErrBackupInsideStore: a backup
	// destination inside the store.
	ErrBackupInsideStore = errors.New("jsonlstore: backup destination inside the store")
	// ErrBlob is jsonlstore.ErrBlob: a blob missing, damaged or of the
	// wrong content.
	ErrBlob = errors.New("jsonlstore: blob missing or damaged")
)
