package searchindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
)

// The search index's file (ROOT/.search/index.db) is a cache whose
// bytes come from anywhere a store does, so it is opened only once it
// proves sound, and never repaired in place:
//
//   - What is at .search, .search/lock, .search/writer, index.db and
//     its -wal and -shm must be what the store puts there: a directory,
//     and regular files of one link each (a symlink would take the index, the store's
//     conversations, out of the store; a FIFO would block). Anything else
//     is errSearchJunk.
//   - searchdb.Open checks the file's schema (no trigger, view or other
//     object of the file's choosing) and bounds every operation in time.
//   - A missing, damaged or junk index is replaced by a NEW file: made
//     as .search/.index-<random>.tmp (0600, the store's owner), filled,
//     checkpointed, synced, then renamed over index.db. Nothing is ever
//     cleared or rewritten in the old file, so nothing planted in it
//     survives.
//   - SQLite opens a database's -wal and -shm by name, so a connection
//     opened while index.db was being replaced could pair one file with
//     the other's -wal. Opening takes .search/lock shared (SQLite opens
//     the -wal and -shm within searchdb.Open); putting a new file in
//     place takes it exclusive, and removes the old file's -wal and -shm
//     before the rename. Connections to the old file go on with the
//     unlinked files and reopen at their next use (openSearchLocked sees
//     the file replaced); they never remove a -wal by name (searchdb
//     sets PERSIST_WAL).
//   - A file this user may not read or write (another user's) is a
//     permission error (fs.ErrPermission), never taken for a missing or
//     damaged index, and is left alone: a search then reads the logs.

// errSearchJunk reports something at a search index path that the store
// never puts there.
var errSearchJunk = errors.New("not what the store keeps there")

// searchTempPrefix begins the name of a new index being made in
// .search/: .index-<random>.tmp, with its -wal and -shm.
const searchTempPrefix = ".index-"

// searchTempAge is the age past which a new index's leftover (its
// maker crashed) is removed by the next one that puts a new index in
// place: a maker writes it continuously.
const searchTempAge = time.Hour

// searchSidecars are the files SQLite keeps beside a database.
var searchSidecars = []string{"-wal", "-shm", "-journal"}

// checkSearchEntry reports whether name is missing (fs.ErrNotExist), a
// regular file of one link (nil), or anything else (errSearchJunk).
func (x *Index) checkSearchEntry(name string) (fs.FileInfo, error) {
	fi, err := x.fs.Lstat(name)
	if err != nil {
		return nil, layout.OpErr("search index", "", err)
	}
	if !fi.Mode().IsRegular() || vfs.Links(fi) != 1 {
		return fi, layout.PathErr("search index", "", name, fmt.Errorf("%w: %s with %d links", errSearchJunk, fi.Mode().Type(), vfs.Links(fi)))
	}
	return fi, nil
}

// checkSearchDir reports whether .search is a directory: missing is
// searchdb.ErrMissing, anything else errSearchJunk.
func (x *Index) checkSearchDir() error {
	fi, err := x.fs.Lstat(x.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return searchdb.ErrMissing
	case err != nil:
		return layout.OpErr("search index", "", err)
	case !fi.IsDir():
		return layout.PathErr("search index", "", x.dir, fmt.Errorf("%w: %s", errSearchJunk, fi.Mode().Type()))
	}
	return nil
}

// lockSearch takes .search/lock, shared or exclusive, waiting up to
// searchWait (then searchdb.ErrBusy). The lock file must be a regular
// file (errSearchJunk otherwise); it is made when missing.
func (x *Index) lockSearch(ctx context.Context, exclusive bool) (func(), error) {
	f, fd, err := x.openLockFile(x.lock)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(searchWait))
	defer cancel()
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing the descriptor drops the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			_ = f.Close()
			return nil, layout.PathErr("search index lock", "", x.lock, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s held by another process for %s", searchdb.ErrBusy, x.lock, time.Duration(searchWait))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// openLockFile opens the lock file at name, made when missing; it must
// be a regular file (errSearchJunk otherwise). Closing f drops what was
// locked through fd.
func (x *Index) openLockFile(name string) (f vfs.File, fd int, err error) {
	f, err = x.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		if errors.Is(err, vfs.ErrSymlink) || errors.Is(err, vfs.ErrNotRegular) || errors.Is(err, unix.EISDIR) {
			err = fmt.Errorf("%w: %w", errSearchJunk, err)
		}
		return nil, 0, layout.PathErr("search index lock", "", name, err)
	}
	h, ok := f.(interface{ Fd() uintptr })
	if fi, err := f.Stat(); !ok || err != nil || !fi.Mode().IsRegular() {
		_ = f.Close() // nothing locked
		return nil, 0, layout.PathErr("search index lock", "", name, fmt.Errorf("%w: not a lockable regular file", errSearchJunk))
	}
	return f, int(h.Fd()), nil
}

// lockWriter takes .search/writer exclusively: the index's one writer
// (searchdb.Writer, taken before every write transaction of index.db).
// With searchdb.NoWait it fails at once with searchdb.ErrBusy when
// another process (or handle) holds it; otherwise it waits up to wait,
// in the kernel, so that it is woken the moment the holder releases it
// (SQLite's busy handler would poll, sleeping up to 100 ms between
// tries, while the lock lay free). A wait given up leaves its flock(2)
// to end by itself: the lock, once granted, is dropped at once. A write
// made by a flush that holds the lock (its context says so) does not
// take it again.
func (x *Index) lockWriter(ctx context.Context, wait searchdb.Wait) (func(), error) {
	if ctx.Value(writerHeld{}) == x {
		return func() {}, nil // held by the flush this write is part of
	}
	f, fd, err := x.openLockFile(x.writer)
	if err != nil {
		return nil, err
	}
	release := func() { _ = f.Close() } // closing the descriptor drops the lock
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
		release()
		return nil, layout.PathErr("search index writer lock", "", x.writer, err)
	}
	busy := fmt.Errorf("%w: %s held by another writer", searchdb.ErrBusy, x.writer)
	if wait <= searchdb.NoWait {
		release()
		return nil, busy
	}
	got := make(chan error, 1)
	go func() {
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if !errors.Is(err, unix.EINTR) {
				got <- err
				return
			}
		}
	}()
	t := time.NewTimer(time.Duration(wait))
	defer t.Stop()
	select {
	case err := <-got:
		if err != nil {
			release()
			return nil, layout.PathErr("search index writer lock", "", x.writer, err)
		}
		return release, nil
	case <-t.C:
	case <-ctx.Done():
		busy = context.Cause(ctx)
	}
	go func() {
		defer release() // granted or failed: nothing is held after it
		if err := <-got; err != nil {
			return
		}
	}()
	return nil, busy
}

// openSearchIndex opens the index on disk for this handle and returns it
// with the identity of its file. An index that another process keeps
// from being opened for a moment is tried again for up to wait
// (openIndex). Errors: searchdb.ErrMissing (no .search or no index.db),
// errSearchJunk, a permission error, searchdb's errors.
func (x *Index) openSearchIndex(ctx context.Context, wait searchdb.Wait) (*searchdb.DB, vfs.Identity, error) {
	if err := x.checkSearchDir(); err != nil {
		return nil, vfs.Identity{}, err
	}
	if _, err := x.fs.Lstat(x.file); errors.Is(err, fs.ErrNotExist) {
		return nil, vfs.Identity{}, searchdb.ErrMissing
	}
	unlock, err := x.lockSearch(ctx, false)
	if err != nil {
		return nil, vfs.Identity{}, err
	}
	defer unlock() // SQLite has opened the -wal and -shm by then
	fi, err := x.checkSearchEntry(x.file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, vfs.Identity{}, searchdb.ErrMissing
	}
	if err != nil {
		return nil, vfs.Identity{}, err
	}
	for _, ext := range searchSidecars[:2] {
		if _, err := x.checkSearchEntry(x.file + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, vfs.Identity{}, err
		}
	}
	db, err := x.openIndex(ctx, x.h.Abs(x.file), wait)
	if err != nil {
		return nil, vfs.Identity{}, err
	}
	return db, vfs.IdentityOf(fi), nil
}

// openIndex opens the index file at path, trying again, backing off,
// while it is busy (searchdb.ErrBusy: another process holds a lock that
// keeps a connection from reading its schema) for up to wait. Many
// processes opening and closing the index at once make this common:
// the first connection after the last one closed recovers the WAL, and
// the last to close checkpoints it, each holding the file meanwhile.
func (x *Index) openIndex(ctx context.Context, path string, wait searchdb.Wait) (*searchdb.DB, error) {
	deadline := time.Now().Add(time.Duration(wait))
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		db, err := searchdb.Open(ctx, path, searchdb.OpenOptions{Writer: x.lockWriter})
		if !errors.Is(err, searchdb.ErrBusy) || !time.Now().Add(pause).Before(deadline) {
			return db, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// fixSearchDir makes .search a directory and .search/lock and
// .search/writer regular files, removing what is there in their place (a file, a symlink — never
// followed —, a FIFO, a directory where the lock belongs). Everything
// else in .search is left alone.
func (x *Index) fixSearchDir() error {
	switch err := x.checkSearchDir(); {
	case errors.Is(err, errSearchJunk):
		x.log.Warn("jsonlstore: search index directory is not a directory: replacing it", "err", err)
		if err := x.fs.Remove(x.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return layout.OpErr("search index", "", err)
		}
		fallthrough
	case errors.Is(err, searchdb.ErrMissing):
		if err := x.fs.Mkdir(x.dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return layout.OpErr("search index", "", err)
		}
	case err != nil:
		return err
	}
	for _, name := range []string{x.lock, x.writer} {
		if _, err := x.checkSearchEntry(name); errors.Is(err, errSearchJunk) {
			x.log.Warn("jsonlstore: search index lock is not a regular file: replacing it", "err", err, "path", name)
			if err := x.fs.RemoveAll(name); err != nil {
				return layout.OpErr("search index", "", err)
			}
		}
	}
	return nil
}

// newSearchIndex makes a new, empty index as a temporary file in
// .search and opens it. finish makes it whole and durable and closes it
// (before put puts it in place); drop removes it.
func (x *Index) newSearchIndex(ctx context.Context) (db *searchdb.DB, name string, err error) {
	name = x.dir + "/" + searchTempPrefix + layout.RandomSuffix() + tmpSuffix
	f, err := x.fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return nil, "", layout.OpErr("search index", "", err)
	}
	if err := f.Close(); err != nil {
		x.dropSearchIndex(nil, name)
		return nil, "", layout.OpErr("search index", "", err)
	}
	db, err = searchdb.Open(ctx, x.h.Abs(name), searchdb.OpenOptions{Create: true})
	if err != nil {
		x.dropSearchIndex(nil, name)
		return nil, "", err
	}
	return db, name, nil
}

// finishSearchIndex makes the new index name whole in its file
// (checkpointed), closes it, removes its -wal and -shm and syncs it.
func (x *Index) finishSearchIndex(ctx context.Context, db *searchdb.DB, name string) error {
	err := db.Checkpoint(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, ext := range searchSidecars {
		if err := x.fs.Remove(name + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return layout.OpErr("search index", "", err)
		}
	}
	f, err := x.fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return layout.OpErr("search index", "", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return layout.OpErr("search index", "", err)
	}
	return nil
}

// dropSearchIndex closes (if db is not nil) and removes the new index
// name.
func (x *Index) dropSearchIndex(db *searchdb.DB, name string) {
	if db != nil {
		_ = db.Close() // removed below
	}
	for _, ext := range append([]string{""}, searchSidecars...) {
		_ = x.fs.Remove(name + ext) // a leftover is swept by the next putSearchIndex
	}
}

// putSearchIndex puts the new index name in place of index.db when
// replace, told what is there now (its Lstat), says so; otherwise it
// drops it. Under the exclusive lock: the old file's -wal and -shm are
// removed (whatever they are), then name is renamed over index.db
// (a directory there is removed first), and .search synced. It reports
// whether it put it in place.
func (x *Index) putSearchIndex(ctx context.Context, name string, replace func(fs.FileInfo, error) bool) (bool, error) {
	unlock, err := x.lockSearch(ctx, true)
	if err != nil {
		x.dropSearchIndex(nil, name)
		return false, err
	}
	defer unlock()
	x.sweepSearchTemps(name)
	fi, err := x.fs.Lstat(x.file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		x.dropSearchIndex(nil, name)
		return false, layout.OpErr("search index", "", err)
	}
	if !replace(fi, err) {
		x.dropSearchIndex(nil, name)
		return false, nil
	}
	for _, ext := range searchSidecars {
		if err := x.fs.RemoveAll(x.file + ext); err != nil {
			x.dropSearchIndex(nil, name)
			return false, layout.OpErr("search index", "", err)
		}
	}
	if fi != nil && fi.IsDir() {
		if err := x.fs.RemoveAll(x.file); err != nil {
			x.dropSearchIndex(nil, name)
			return false, layout.OpErr("search index", "", err)
		}
	}
	if err := x.fs.Rename(name, x.file); err != nil {
		x.dropSearchIndex(nil, name)
		return false, layout.OpErr("search index", "", err)
	}
	if err := x.fs.SyncDir(x.dir); err != nil {
		return true, layout.OpErr("search index", "", err)
	}
	return true, nil
}

// sweepSearchTemps removes new indexes' leftovers in .search (but keep)
// that nobody has written for searchTempAge.
func (x *Index) sweepSearchTemps(keep string) {
	names, err := vfs.ReadDirNames(x.fs, x.dir)
	if err != nil {
		return
	}
	stale := map[string]bool{}
	fresh := map[string]bool{}
	for _, n := range names {
		base := n
		for _, ext := range searchSidecars {
			base = strings.TrimSuffix(base, ext)
		}
		if !strings.HasPrefix(base, searchTempPrefix) || !strings.HasSuffix(base, tmpSuffix) || x.dir+"/"+base == keep {
			continue
		}
		fi, err := x.fs.Lstat(x.dir + "/" + n)
		if err != nil || time.Since(fi.ModTime()) < searchTempAge {
			fresh[base] = true
			continue
		}
		stale[base] = true
	}
	for base := range stale {
		if fresh[base] {
			continue
		}
		for _, ext := range append([]string{""}, searchSidecars...) {
			_ = x.fs.Remove(x.dir + "/" + base + ext) // best effort: the next sweep tries again
		}
	}
}

// replaceSearchLocked puts a new, empty index in place of the file
// found (nil: none) unless another process replaced it meanwhile, and
// opens what is then in place (waiting for it as wait says). x.mu
// must be held.
func (x *Index) replaceSearchLocked(ctx context.Context, found *vfs.Identity, wait searchdb.Wait) (*searchdb.DB, error) {
	x.closeSearchLocked()
	if err := x.fixSearchDir(); err != nil {
		return nil, err
	}
	db, name, err := x.newSearchIndex(ctx)
	if err != nil {
		return nil, err
	}
	if err := x.finishSearchIndex(ctx, db, name); err != nil {
		x.dropSearchIndex(nil, name)
		return nil, err
	}
	_, err = x.putSearchIndex(ctx, name, func(now fs.FileInfo, err error) bool {
		if found == nil || now == nil {
			return found == nil && now == nil
		}
		return vfs.IdentityOf(now) == *found
	})
	if err != nil {
		return nil, err
	}
	return x.openSearchLocked(ctx, false, wait)
}

// searchIndexBad reports whether err says the index on disk is no sound
// index (damaged, of another version, junk where it belongs): one to
// replace.
func searchIndexBad(err error) bool {
	return errors.Is(err, searchdb.ErrDamaged) || errors.Is(err, errSearchJunk)
}

// openSearchLocked returns the open index, opening it when it is not
// open or its file was replaced. Without create, a missing index is
// searchdb.ErrMissing. With create, a missing, damaged, outdated or
// junk index is replaced by a new one; an index this user may not read
// or write stays an error (fs.ErrPermission). An index another process
// keeps busy is tried again for up to wait. x.mu must be held.
func (x *Index) openSearchLocked(ctx context.Context, create bool, wait searchdb.Wait) (*searchdb.DB, error) {
	if x.closed {
		return nil, sessionstore.ErrClosed
	}
	if x.db != nil {
		if fi, err := x.fs.Lstat(x.file); err == nil && vfs.IdentityOf(fi) == x.dbID {
			return x.db, nil
		}
	}
	x.closeSearchLocked()
	db, id, err := x.openSearchIndex(ctx, wait)
	if err == nil {
		x.db, x.dbID = db, id
		return db, nil
	}
	if !create || !errors.Is(err, searchdb.ErrMissing) && !searchIndexBad(err) {
		return nil, err
	}
	var found *vfs.Identity
	if searchIndexBad(err) {
		x.log.Warn("jsonlstore: search index damaged, of another version, or not a file: building it anew", "err", err)
		// What is found there now (nothing, when .search is no
		// directory): it is replaced unless another process replaced it
		// meanwhile.
		if fi, err := x.fs.Lstat(x.file); err == nil {
			id := vfs.IdentityOf(fi)
			found = &id
		}
	}
	return x.replaceSearchLocked(ctx, found, wait)
}

func (x *Index) closeSearchLocked() {
	if x.db != nil {
		_ = x.db.Close() // a cache: what it did not write, a later search redoes
		x.db = nil
	}
}
