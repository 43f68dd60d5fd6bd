package jsonlstore

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
	"github.com/sessionstore/sessionstore/session"
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

// isCorruption reports whether err is a *sessionstore.CorruptionError.
func isCorruption(err error) bool {
	var ce *sessionstore.CorruptionError
	return errors.As(err, &ce)
}

// errLogMissing is the cause of ErrNoLog for a session without its log.
var errLogMissing = errors.New(LogFile + " is missing: the session's records are gone")

// errNotSession is wrapped, with sessionstore.ErrNotFound, by the error
// for a directory that holds no session.
var errNotSession = errors.New("no session")

// sessionFiles are the names a session directory holds besides its log.
var sessionFiles = []string{fslease.LockFile, fslease.RecordFile, SummaryFile, ArchiveDir, ForensicDir, BlobDir, SettingsFile}

// damaged is the corruption error for session id whose log is unusable
// because of cause.
func damaged(id session.SessionID, cause error) error {
	return &sessionstore.CorruptionError{ID: id, Path: layout.LogPath(id), Err: fmt.Errorf("%w: %w", ErrNoLog, cause)}
}

// logErr classifies err, met opening or stating session id's log: the
// session's own error when its directory is gone or is not one
// (ErrNotFound, …), ErrNotFound for a directory that holds no session,
// and a *sessionstore.CorruptionError for a session whose log is missing
// or is not a regular file. It returns nil when err says nothing about
// the log's presence or kind (a permission or I/O error).
func (s *Store) logErr(id session.SessionID, err error) error {
	missing := errors.Is(err, fs.ErrNotExist)
	if !missing && !errors.Is(err, vfs.ErrNotRegular) && !errors.Is(err, vfs.ErrSymlink) && !errors.Is(err, syscall.EISDIR) {
		return nil
	}
	if xerr := s.root.Exists(id); xerr != nil {
		return xerr
	}
	if !missing {
		return damaged(id, err)
	}
	for _, name := range sessionFiles {
		_, lerr := s.fs.Lstat(layout.SessionDir(id) + "/" + name)
		if lerr == nil {
			return damaged(id, errLogMissing)
		}
		if !errors.Is(lerr, fs.ErrNotExist) {
			return layout.OpErr("session", id, lerr)
		}
	}
	return fmt.Errorf("%w: %s holds %w (no %s)", sessionstore.ErrNotFound, layout.SessionDir(id), errNotSession, LogFile)
}

// statLog describes session id's log, which must be a regular file; any
// other outcome is classified as logErr does.
func (s *Store) statLog(id session.SessionID) (fs.FileInfo, error) {
	fi, err := s.fs.Lstat(layout.LogPath(id))
	if err == nil {
		err = kindErr(layout.LogPath(id), fi)
	}
	if err != nil {
		if lerr := s.logErr(id, err); lerr != nil {
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

// checkLog checks that session id has a log a holder may write to: a
// regular file (statLog) with a single link (linkErr). It creates
// nothing, so it runs before the lease is taken.
func (s *Store) checkLog(id session.SessionID) error {
	fi, err := s.statLog(id)
	if err != nil {
		return err
	}
	return linkErr(id, fi)
}

// breakLink says how to give a hard-linked log a file of its own.
const breakLink = "cp " + LogFile + " " + LogFile + ".new && mv " + LogFile + ".new " + LogFile

// linkErr refuses a log, described by fi, that shares its file with
// another name: writing to it would write there too.
func linkErr(id session.SessionID, fi fs.FileInfo) error {
	if n := vfs.Links(fi); n > 1 {
		return fmt.Errorf("%w: session %s: %s has %d links; give it a file of its own: %s", ErrLinkedLog, id, layout.LogPath(id), n, breakLink)
	}
	return nil
}

// checkWritable runs under a freshly taken lease, before anything is
// written: the session directory holds no symlink and its log is one a
// holder may write to (checked again here: it may have changed since
// checkLog ran without the lease).
func (s *Store) checkWritable(id session.SessionID) error {
	if err := s.checkNoSymlinks(id); err != nil {
		return err
	}
	return s.checkLog(id)
}

// logFloor checks, before the lease is taken, that session id has a log a
// holder may write to (checkLog), and returns the generation of its last
// record: a new generation must be above every generation in the log,
// even if lease.json was lost or is an older copy (the log's generations
// never decrease). A log whose last record cannot be read yields 0;
// recovery, under the lease, says why.
func (s *Store) logFloor(id session.SessionID) (uint64, error) {
	if err := s.checkLog(id); err != nil {
		return 0, err
	}
	var minGen uint64
	if v, err := openView(s.fs, id, s.opts.MaxRecordBytes); err == nil {
		if last, _, _ := v.back.Last(); last != nil {
			minGen = last.Gen
		}
		_ = v.Close() // read-only
	}
	return minGen, nil
}

// endsStoreWide reports whether err, met working on one session, ends a
// store-wide operation: a done context or a closed store. Anything else
// concerns that session alone.
func endsStoreWide(err error) bool {
	return errors.Is(err, sessionstore.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// verifyLinks notes names of session id that share their file with
// another name (a hard link): a holder refuses to append to such a log,
// and replaces such a summary.json rather than write through it.
func (s *Store) verifyLinks(_ context.Context, id session.SessionID, sr *sessionstore.SessionVerifyReport) error {
	for _, name := range []string{layout.LogPath(id), layout.SummaryPath(id)} {
		fi, err := s.fs.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() || vfs.Links(fi) < 2 {
			continue // what is missing or of another kind, verifyLog reports
		}
		msg := fmt.Sprintf("%d hard links: the next holder replaces it with a file of its own instead of writing through the link", vfs.Links(fi))
		if name == layout.LogPath(id) {
			msg = fmt.Sprintf("%d hard links: no holder appends to it (%v) until it has a file of its own (%s); reading is unaffected",
				vfs.Links(fi), ErrLinkedLog, breakLink)
		}
		sr.Notes = append(sr.Notes, sessionstore.Finding{File: name, Message: msg})
	}
	return nil
}
