package jsonlstore

import (
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// Sentinel errors of the file store, besides the contract's (package
// sessionstore). Callers classify with errors.Is. Each is package maintenance's
// value of the same name, which the store's rooms return.
var (
	// ErrUnsafeRoot is returned by Open for a store root that another local
	// user could change: one writable by its group or by others, or owned by
	// a user other than this process's (or root). Whoever can write the root
	// can rename, replace or plant whole session directories, which the
	// store's per-session checks cannot tell from the owner's own.
	ErrUnsafeRoot = maintenance.ErrUnsafeRoot

	// ErrNoLog is wrapped by the *sessionstore.CorruptionError of a
	// session directory without a usable log: log.jsonl is missing while
	// the session's other files are there (its records are gone), or it is
	// not a regular file (a symlink, FIFO, socket, device or directory).
	// Reads, Acquire and Repair fail with it, create nothing in the
	// directory, and store-wide operations report the session and go on.
	// Nothing in the store can bring the records back: restore log.jsonl
	// from a backup, or remove the directory.
	ErrNoLog = maintenance.ErrNoLog

	// ErrLinkedLog reports a session whose log.jsonl has more than one hard
	// link. Appending to it, and truncating a torn tail, would change every
	// file that shares it, so no holder writes to it: Acquire (and Append,
	// should a link appear later) refuses, and nothing is written. Readers
	// read it as usual. Copying the log over itself (cp, then mv) breaks
	// the link.
	ErrLinkedLog = maintenance.ErrLinkedLog

	// ErrBackupInsideStore reports a Backup destination that is the store's
	// root or lies inside it: the copy would become part of what it copies.
	ErrBackupInsideStore = maintenance.ErrBackupInsideStore

	// ErrBlob reports a blob that is missing, damaged or of the wrong content.
	ErrBlob = maintenance.ErrBlob

	// ErrNoSearch reports a search (Search, ReindexSearch, VerifySearch,
	// FlushSearch) on a store opened without a search index, and Open
	// with an Options.Search that is not one. Searching is a component a
	// store is opened with, so that a program that never searches links
	// no SQLite: open the store with
	// jsonlstore.Options{Search: fts.New()} (package
	// github.com/sessionstore/sessionstore/jsonlstore/fts). Appends of a
	// store opened without it still leave the index correct for one
	// opened with it. It matches errors.ErrUnsupported too.
	ErrNoSearch = fmt.Errorf("jsonlstore: store opened without a search index: open it with jsonlstore.Options{Search: fts.New()} (package github.com/sessionstore/sessionstore/jsonlstore/fts): %w", errors.ErrUnsupported)
)

// fmtNoSearch is the error of Options.Search set to v, which is no
// search index the store can use.
func fmtNoSearch(v SearchIndex) error {
	return fmt.Errorf("%w: Options.Search is a %T (%s), not fts.New()", ErrNoSearch, v, v.SearchIndexName())
}

// Names of a session's files and directories (FORMAT.md "Layout"). They
// are the names the store's rooms use (TestNamesAreTheRooms ties them).
const (
	LogFile     = "log.jsonl"    // a session's log
	SummaryFile = "summary.json" // a projection of the latest record
	ArchiveDir  = "archive"      // compacted segments
	ForensicDir = "forensic"     // bytes recovery or repair removed
	BlobDir     = "blobs"        // content kept out of line
	// SettingsFile records what a session's records were written with
	// (FORMAT.md "settings.json").
	SettingsFile = "settings.json"
)

// MaxReadRecordBytes bounds the record cap a reader honours, whatever a
// settings.json says.
const MaxReadRecordBytes = sessionstore.MaxReadRecordBytes
