package jsonlstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Marks, the holder's part of the catalog (catalog.go). Before a holder
// changes a session's log under its generation — recovery's cut of a torn
// tail, an append, a compaction, a repair — the mark
// .catalog/marks/<id>.<generation> exists and is durable, so that no
// catalog is believed about the session without a look at its log. The
// mark is made right after the lease is taken, and checked before every
// append (a stat in an open directory, nothing synced): a mark removed
// by hand, or a marks directory deleted with the catalog, is made again
// before the log changes.
//
// Durability: a mark is an empty file (a name of markSource); what must
// survive a power loss is its name, so the marks directory is synced
// after it is made. One sync per
// lease, none per append. The directories are made durable when a holder
// makes them, because a catalog directory deleted by hand (rm does not
// sync) could otherwise come back after a power loss, with a catalog that
// knows nothing of the marks made since in the new one: the catalog
// directory after making the marks directory, the root after making the
// catalog directory — except for a session being created, whose
// publishing rename syncs the root anyway before anything can be appended
// to it. A mark that cannot be made (a full disk, a
// directory its owner may not write) never fails the holder: it removes
// the catalog instead, durably, so that listings scan until a rebuild,
// and tries the mark again before each append, at most once a second.

// markRetry is how long a writer waits before it tries again to make a
// mark that could not be made.
const markRetry = time.Second

// takeLease takes the lease of session id in directory dir (the session's,
// or the temporary directory of one being created) and marks the session
// for the lease's generation. marked reports whether the mark is durable.
func (s *Store) takeLease(ctx context.Context, id session.SessionID, dir string, try bool, opts fslease.Options) (_ leaseHandle, marked bool, _ error) {
	lease, err := s.leases.acquire(ctx, s.root.Abs(dir), try, opts)
	if err != nil {
		return nil, false, err
	}
	sync := dirsDurable
	if dir != layout.SessionDir(id) {
		sync = dirsCreator // a temporary directory, published by a rename that syncs the root
	}
	return lease, s.mark(id, lease.Generation(), sync), nil
}

// How much of what ensureCatalogDirs makes is made durable at once.
type dirSync int

const (
	// dirsLazy: nothing (a catalog's writer, whose sync of the catalog
	// directory after the rename covers what it made).
	dirsLazy dirSync = iota
	// dirsCreator: the catalog directory, after the marks directory is
	// made in it (a creator: its publishing rename syncs the root).
	dirsCreator
	// dirsDurable: that, and the root after the catalog directory is made.
	dirsDurable
)

// mark makes session id's mark for generation gen durable, making the
// catalog's directories as needed (made durable as sync says). When it
// cannot, it removes the catalog (catalog.go: a listing then scans) and
// reports false.
func (s *Store) mark(id session.SessionID, gen uint64, sync dirSync) bool {
	err := s.makeMark(id, gen, sync)
	if err == nil {
		return true
	}
	s.opts.Logger.Warn("jsonlstore: catalog mark not made; the catalog is removed, listings scan until it is rebuilt",
		"session", id, "generation", gen, "err", err)
	if rerr := s.voidCatalog(); rerr != nil {
		s.opts.Logger.Warn("jsonlstore: catalog not removed either; run 'sessions reindex' once the disk is writable",
			"err", rerr)
	}
	return false
}

func (s *Store) makeMark(id session.SessionID, gen uint64, sync dirSync) error {
	if err := s.ensureCatalogDirs(sync); err != nil {
		return err
	}
	switch err := s.newMark(marksDir + "/" + catalog.MarkName(id, gen)); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		// Made already (by an earlier try of this holder, or by a
		// rebuild on its behalf); synced below like a new one.
	default:
		return err
	}
	return s.fs.SyncDir(marksDir)
}

// markSource is the empty file every mark is a name of: a hard link
// costs a directory entry, where a file of its own costs an inode made at
// the mark and freed at its removal (file systems scan past recently
// freed inodes to make new ones: marks made and removed by the thousand
// made every file the store creates dearer). Its name is no mark's.
const markSource = marksDir + "/.mark"

// newMark makes the mark name (fs.ErrExist if it is there): a link to
// markSource, made first if it is missing, or, where no link can be made
// (a file system without hard links, one with too many, a markSource
// that is not a regular file), an empty file of its own. Its name is all
// it says either way.
func (s *Store) newMark(name string) error {
	err := s.fs.Link(markSource, name)
	if errors.Is(err, fs.ErrNotExist) {
		if f, cerr := s.fs.OpenFile(markSource, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm); cerr == nil {
			_ = f.Close() // empty: nothing to flush
		}
		err = s.fs.Link(markSource, name)
	}
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err := s.fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err == nil {
		_ = f.Close() // empty: its name is all it says
	}
	return err
}

// ensureCatalogDirs makes the catalog directory and its marks directory
// when they are missing, made durable in their parents as sync says. A
// marks directory made in a catalog directory made just now needs no sync
// of its own: that directory holds no catalog yet, and whoever writes one
// there syncs the directory after it.
func (s *Store) ensureCatalogDirs(sync dirSync) error {
	made := false
	switch err := s.fs.Mkdir(CatalogDir, layout.DirPerm); {
	case err == nil:
		made = true
		if sync >= dirsDurable {
			if err := s.fs.SyncDir("."); err != nil {
				return err
			}
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	switch err := s.fs.Mkdir(marksDir, layout.DirPerm); {
	case err == nil:
		if sync >= dirsCreator && !made {
			return s.fs.SyncDir(CatalogDir)
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	return nil
}

// voidCatalog removes the catalog file, durably: no listing believes it
// any more, and the next one to rebuild it looks at every session.
func (s *Store) voidCatalog() error {
	err := s.fs.Remove(catalogFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	return s.fs.SyncDir(CatalogDir)
}

// unmark removes session id's mark for generation gen (a deleted
// session's): nothing to sync, a mark that survives costs a stat.
func (s *Store) unmark(id session.SessionID, gen uint64) {
	_ = s.fs.Remove(marksDir + "/" + catalog.MarkName(id, gen))
}

// writerMark is a writer's mark: made at Acquire or Create, checked before
// each append.
type writerMark struct {
	dir   vfs.SubFS // the marks directory, held open; nil when not marked
	name  string
	retry time.Time // when to try again to make a mark that failed
}

// ensureMarkLocked makes sure, before w changes its log, that its mark is
// still there: one stat of the mark in the held marks directory. That the
// directory was not removed needs no stat of its own: a directory is
// removed only once empty, and nothing can be made in it afterwards, so
// the mark is found in a held directory only while the directory is there.
// A missing one is made again, as at Acquire.
func (w *writer) ensureMarkLocked() {
	m := &w.mark
	if m.dir != nil {
		if _, err := m.dir.Lstat(m.name); err == nil {
			return
		}
		m.close()
	}
	now := w.s.opts.Now()
	if now.Before(m.retry) {
		return
	}
	if !w.s.mark(w.id, w.lease.Generation(), dirsDurable) {
		m.retry = now.Add(markRetry)
		return
	}
	m.open(w.s, w.id, w.lease.Generation())
}

// open holds the marks directory open for the mark of (id, gen), which
// exists.
func (m *writerMark) open(s *Store, id session.SessionID, gen uint64) {
	d, err := vfs.Sub(s.fs, marksDir)
	if err != nil {
		return // checked again, and made again, before the next append
	}
	m.dir, m.name = d, catalog.MarkName(id, gen)
}

func (m *writerMark) close() {
	if m.dir != nil {
		_ = m.dir.Close() // a directory handle: nothing to flush
		m.dir = nil
	}
}

// markFor returns the mark of a writer whose lease was taken (and marked
// if marked) by takeLease.
func (s *Store) markFor(id session.SessionID, gen uint64, marked bool) writerMark {
	var m writerMark
	if marked {
		m.open(s, id, gen)
	} else {
		m.retry = s.opts.Now().Add(markRetry)
	}
	return m
}
