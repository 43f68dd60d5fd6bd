package catalogfile

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Marks, the holder's part of the catalog (doc.go). Before a holder
// changes a session's log under its generation — recovery's cut of a torn
// tail, an append, a compaction, a repair — the mark
// .catalog/marks/<id>.<generation> exists and is durable, so that no
// catalog is believed about the session without a look at its log. The
// mark is made right after the lease is taken, and checked before every
// append (a stat in an open directory, nothing synced): a mark removed
// by hand, or a marks directory deleted with the catalog, is made again
// before the log changes.
//
// Durability: a mark is an empty file (a name of MarkSource); what must
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

// DirSync is how much of what ensureCatalogDirs makes is made durable at once.
type DirSync int

const (
	// DirsLazy: nothing (a catalog's writer, whose sync of the catalog
	// directory after the rename covers what it made).
	DirsLazy DirSync = iota
	// DirsCreator: the catalog directory, after the marks directory is
	// made in it (a creator: its publishing rename syncs the root).
	DirsCreator
	// DirsDurable: that, and the root after the catalog directory is made.
	DirsDurable
)

// Mark makes session id's mark for generation gen durable, making the
// catalog's directories as needed (made durable as sync says). When it
// cannot, it removes the catalog (a listing then scans) and
// reports false.
func (c *Catalog) Mark(id session.SessionID, gen uint64, sync DirSync) bool {
	err := c.makeMark(id, gen, sync)
	if err == nil {
		return true
	}
	c.root.Logger.Warn("jsonlstore: catalog mark not made; the catalog is removed, listings scan until it is rebuilt",
		"session", id, "generation", gen, "err", err)
	if rerr := c.voidCatalog(); rerr != nil {
		c.root.Logger.Warn("jsonlstore: catalog not removed either; run 'sessions reindex' once the disk is writable",
			"err", rerr)
	}
	return false
}

func (c *Catalog) makeMark(id session.SessionID, gen uint64, sync DirSync) error {
	if err := c.ensureCatalogDirs(sync); err != nil {
		return err
	}
	switch err := c.newMark(MarksDir + "/" + catalog.MarkName(id, gen)); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		// Made already (by an earlier try of this holder, or by a
		// rebuild on its behalf); synced below like a new one.
	default:
		return err
	}
	return c.root.FS.SyncDir(MarksDir)
}

// MarkSource is the empty file every mark is a name of: a hard link
// costs a directory entry, where a file of its own costs an inode made at
// the mark and freed at its removal (file systems scan past recently
// freed inodes to make new ones: marks made and removed by the thousand
// made every file the store creates dearer). Its name is no mark's.
const MarkSource = MarksDir + "/.mark"

// newMark makes the mark name (fs.ErrExist if it is there): a link to
// MarkSource, made first if it is missing, or, where no link can be made
// (a file system without hard links, one with too many, a MarkSource
// that is not a regular file), an empty file of its own. Its name is all
// it says either way.
func (c *Catalog) newMark(name string) error {
	err := c.root.FS.Link(MarkSource, name)
	if errors.Is(err, fs.ErrNotExist) {
		if f, cerr := c.root.FS.OpenFile(MarkSource, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm); cerr == nil {
			_ = f.Close() // empty: nothing to flush
		}
		err = c.root.FS.Link(MarkSource, name)
	}
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err := c.root.FS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
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
func (c *Catalog) ensureCatalogDirs(sync DirSync) error {
	made := false
	switch err := c.root.FS.Mkdir(Dir, layout.DirPerm); {
	case err == nil:
		made = true
		if sync >= DirsDurable {
			if err := c.root.FS.SyncDir("."); err != nil {
				return err
			}
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	switch err := c.root.FS.Mkdir(MarksDir, layout.DirPerm); {
	case err == nil:
		if sync >= DirsCreator && !made {
			return c.root.FS.SyncDir(Dir)
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	return nil
}

// voidCatalog removes the catalog file, durably: no listing believes it
// any more, and the next one to rebuild it looks at every session.
func (c *Catalog) voidCatalog() error {
	err := c.root.FS.Remove(Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	return c.root.FS.SyncDir(Dir)
}

// Unmark removes session id's mark for generation gen (a deleted
// session's): nothing to sync, a mark that survives costs a stat.
func (c *Catalog) Unmark(id session.SessionID, gen uint64) {
	_ = c.root.FS.Remove(MarksDir + "/" + catalog.MarkName(id, gen))
}

// WriterMark is a writer's mark: made at Acquire or Create, checked before
// each append. Its writer's lock guards it.
type WriterMark struct {
	c     *Catalog
	id    session.SessionID
	gen   uint64    // the lease's generation
	dir   vfs.SubFS // the marks directory, held open; nil when not marked
	name  string
	retry time.Time // when to try again to make a mark that failed
}

// Ensure makes sure, before its writer changes its log, that the mark is
// still there: one stat of the mark in the held marks directory. That the
// directory was not removed needs no stat of its own: a directory is
// removed only once empty, and nothing can be made in it afterwards, so
// the mark is found in a held directory only while the directory is there.
// A missing one is made again, as at Acquire.
func (m *WriterMark) Ensure() {
	if m.dir != nil {
		if _, err := m.dir.Lstat(m.name); err == nil {
			return
		}
		m.Close()
	}
	now := m.c.root.Now()
	if now.Before(m.retry) {
		return
	}
	if !m.c.Mark(m.id, m.gen, DirsDurable) {
		m.retry = now.Add(markRetry)
		return
	}
	m.open()
}

// open holds the marks directory open for the mark, which exists.
func (m *WriterMark) open() {
	d, err := vfs.Sub(m.c.root.FS, MarksDir)
	if err != nil {
		return // checked again, and made again, before the next append
	}
	m.dir, m.name = d, catalog.MarkName(m.id, m.gen)
}

// Close lets go of the marks directory (the mark stays).
func (m *WriterMark) Close() {
	if m.dir != nil {
		_ = m.dir.Close() // a directory handle: nothing to flush
		m.dir = nil
	}
}

// MarkFor returns the mark of a writer of session id whose lease of
// generation gen was taken, and marked if marked (Mark reported true).
func (c *Catalog) MarkFor(id session.SessionID, gen uint64, marked bool) WriterMark {
	m := WriterMark{c: c, id: id, gen: gen}
	if marked {
		m.open()
	} else {
		m.retry = c.root.Now().Add(markRetry)
	}
	return m
}
