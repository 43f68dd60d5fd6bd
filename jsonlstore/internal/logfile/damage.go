package logfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// What a session is, and what a damaged one is.
//
// A session is a directory of the root named by a valid ID that holds
// log.jsonl, a regular file. A directory without a log is
//
//   - not a session when it holds none of the other files a session holds
//     (sessionFiles): a store root may share its directory with other
//     things. It is ErrNotFound, listings leave it out, and nothing is
//     ever created in it;
//   - a damaged session when it holds any of them: its records are gone.
//
// A log that is a symlink, a FIFO, a socket, a device or a directory is
// damage too. Damage is a *sessionstore.CorruptionError at offset 0 of the
// log, for every read and for Acquire, which checks the log before it takes
// the lease (taking it creates the lease files). Store-wide operations report
// a damaged session, or one they may not read, and go on with the others
// (Page.Unreadable, sessionstore.VerifyReport.Unreadable, …): one bad session
// never blocks the store.

// IsCorruption reports whether err is a *sessionstore.CorruptionError.
func IsCorruption(err error) bool {
	var ce *sessionstore.CorruptionError
	return errors.As(err, &ce)
}

// ErrLogMissing is the cause of ErrNoLog for a session without its log.
var ErrLogMissing = errors.New(layout.LogFile + " is missing: the session's records are gone")

// ErrNotSession is wrapped, with sessionstore.ErrNotFound, by the error
// for a directory that holds no session.
var ErrNotSession = errors.New("no session")

// sessionFiles are the names a session directory holds besides its log.
var sessionFiles = []string{fslease.LockFile, fslease.RecordFile, layout.SummaryFile, layout.ArchiveDir, layout.ForensicDir, layout.BlobDir, layout.SettingsFile}

// damaged is the corruption error for session id whose log is unusable
// because of cause.
func damaged(id session.SessionID, cause error) error {
	return &sessionstore.CorruptionError{ID: id, Path: layout.LogPath(id), Err: fmt.Errorf("%w: %w", maintenance.ErrNoLog, cause)}
}

// LogErr classifies err, met opening or stating session id's log: the
// session's own error when its directory is gone or is not one
// (ErrNotFound, …), ErrNotFound for a directory that holds no session,
// and a *sessionstore.CorruptionError for a session whose log is missing
// or is not a regular file. It returns nil when err says nothing about
// the log's presence or kind (a permission or I/O error).
func LogErr(root *layout.Root, id session.SessionID, err error) error {
	missing := errors.Is(err, fs.ErrNotExist)
	if !missing && !errors.Is(err, vfs.ErrNotRegular) && !errors.Is(err, vfs.ErrSymlink) && !errors.Is(err, syscall.EISDIR) {
		return nil
	}
	if xerr := root.Exists(id); xerr != nil {
		return xerr
	}
	if !missing {
		return damaged(id, err)
	}
	for _, name := range sessionFiles {
		_, lerr := root.FS.Lstat(layout.SessionDir(id) + "/" + name)
		if lerr == nil {
			return damaged(id, ErrLogMissing)
		}
		if !errors.Is(lerr, fs.ErrNotExist) {
			return layout.OpErr("session", id, lerr)
		}
	}
	return fmt.Errorf("%w: %s holds %w (no %s)", sessionstore.ErrNotFound, layout.SessionDir(id), ErrNotSession, layout.LogFile)
}

// StatLog describes session id's log, which must be a regular file; any
// other outcome is classified as logErr does.
func StatLog(root *layout.Root, id session.SessionID) (fs.FileInfo, error) {
	fi, err := root.FS.Lstat(layout.LogPath(id))
	if err == nil {
		err = kindErr(layout.LogPath(id), fi)
	}
	if err != nil {
		if lerr := LogErr(root, id, err); lerr != nil {
			return nil, lerr
		}
		return nil, layout.OpErr("session", id, err)
	}
	return fi, nil
}

// kindErr is the error for name, described by fi, unless it is a regular
// file.
func kindErr(name string, fi fs.FileInfo) error {
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		return &fs.PathError{Op: "open", Path: name, Err: vfs.ErrSymlink}
	case fi.IsDir():
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	return &fs.PathError{Op: "open", Path: name, Err: vfs.ErrNotRegular}
}

// CheckLog checks that session id has a log a holder may write to: a
// regular file (statLog) with a single link (linkErr). It creates
// nothing, so it runs before the lease is taken.
func CheckLog(root *layout.Root, id session.SessionID) error {
	fi, err := StatLog(root, id)
	if err != nil {
		return err
	}
	return LinkErr(id, fi)
}

// BreakLink says how to give a hard-linked log a file of its own.
const BreakLink = "cp " + layout.LogFile + " " + layout.LogFile + ".new && mv " + layout.LogFile + ".new " + layout.LogFile

// LinkErr refuses a log, described by fi, that shares its file with
// another name: writing to it would write there too.
func LinkErr(id session.SessionID, fi fs.FileInfo) error {
	if n := vfs.Links(fi); n > 1 {
		return fmt.Errorf("%w: session %s: %s has %d links; give it a file of its own: %s", maintenance.ErrLinkedLog, id, layout.LogPath(id), n, BreakLink)
	}
	return nil
}

// LogFloor checks, before the lease is taken, that session id has a log a
// holder may write to (checkLog), and returns the generation of its last
// record: a new generation must be above every generation in the log,
// even if lease.json was lost or is an older copy (the log's generations
// never decrease). A log whose last record cannot be read yields 0;
// recovery, under the lease, says why.
func LogFloor(root *layout.Root, id session.SessionID) (uint64, error) {
	if err := CheckLog(root, id); err != nil {
		return 0, err
	}
	var minGen uint64
	if v, err := Open(root.FS, id, root.MaxRecordBytes); err == nil {
		if last, _, _ := v.Back.Last(); last != nil {
			minGen = last.Gen
		}
		_ = v.Close() // read-only
	}
	return minGen, nil
}

// EndsStoreWide reports whether err, met working on one session, ends a
// store-wide operation: a done context or a closed store. Anything else
// concerns that session alone.
func EndsStoreWide(err error) bool {
	return errors.Is(err, sessionstore.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ForSessions calls fn for each of ids in order or, when ids is empty,
// for every session (layout.SessionIDs). It reports whether it listed all
// sessions. A session deleted meanwhile (fn returned ErrNotFound while
// all are listed) is skipped. An error of fn that concerns its session
// alone — anything but a done context, a closed store, or ErrInvalidID or
// ErrNotFound for a given ID — is added to bad, and the loop goes on: one
// bad session never stops a store-wide operation. With bad nil, every
// error but the skipped ones ends the loop (fn reports what it may).
func ForSessions(fsys vfs.FS, ids []session.SessionID, fn func(id session.SessionID) error, bad *[]summary.Unreadable) (all bool, err error) {
	all = len(ids) == 0
	if all {
		if ids, err = layout.SessionIDs(fsys); err != nil {
			return all, err
		}
	}
	for _, id := range ids {
		err := fn(id)
		switch {
		case err == nil:
		case all && errors.Is(err, sessionstore.ErrNotFound):
			// deleted meanwhile, or not a session
		case bad == nil, EndsStoreWide(err), errors.Is(err, sessionstore.ErrInvalidID), errors.Is(err, sessionstore.ErrNotFound):
			return all, err
		default:
			*bad = append(*bad, summary.UnreadableOf(id, err))
		}
	}
	return all, nil
}
