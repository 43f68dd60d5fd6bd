package usage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Disk measures the files of one store: its root, and the gate every
// read of a session passes first.
type Disk struct {
	root *layout.Root
	gate logfile.Gate
}

// New returns the measure of the store at root, whose reads pass gate.
func New(root *layout.Root, gate logfile.Gate) *Disk {
	return &Disk{root: root, gate: gate}
}

// ForSessions calls fn with each session of ids, or of the store (in ID
// order) when ids is empty, and reports in bad those fn could not read;
// all says that it went through the whole store (the facade's
// forSessions).
type ForSessions func(ids []session.SessionID, fn func(id session.SessionID) error, bad *[]summary.Unreadable) (all bool, err error)

// Report is the facade's DiskUsage of sessions ids (every session when
// none is given, and then the leftovers at the root too), each session's
// shared files counted once in the total.
func (d *Disk) Report(ctx context.Context, ids []session.SessionID, forEach ForSessions) (sessionstore.UsageReport, error) {
	var rep sessionstore.UsageReport
	seen := map[vfs.Identity]bool{}
	all, err := forEach(ids, func(id session.SessionID) error {
		u, once, err := d.SessionUsage(ctx, id, seen)
		if err == nil {
			rep.Sessions = append(rep.Sessions, u)
			rep.Total.Add(once)
		}
		return err
	}, &rep.Unreadable)
	if err != nil {
		return rep, err
	}
	if all {
		rep.LeftoverBytes, err = d.LeftoverBytes()
	}
	return rep, err
}

// LeftoverBytes is what the temporary and trash directories at the root
// hold (interrupted creations and deletions; the next repair sweeps old
// ones).
func (d *Disk) LeftoverBytes() (int64, error) {
	entries, err := d.root.FS.ReadDir(".")
	if err != nil {
		return 0, layout.OpErr("du", "", err)
	}
	var total int64
	for _, e := range entries {
		if e.IsDir() && layout.IsLeftover(e.Name()) {
			if _, n, err := Dir(d.root.FS, e.Name()); err == nil {
				total += n
			}
		}
	}
	return total, nil
}

// SessionUsage reports the bytes session id occupies, as jsonlstore's
// DiskUsage promises: apparent file sizes, by kind of file, and in
// SharedBytes those of its files that have another name (a hard link: a
// fork's blobs and pages are its parent's files). once is the same figures
// without the files seen names (by identity: device and inode) — that
// is, what the session adds to the sessions reported before it —, and
// the files it counts are added to seen. It reads directory entries only.
func (d *Disk) SessionUsage(ctx context.Context, id session.SessionID, seen map[vfs.Identity]bool) (u, once sessionstore.SessionUsage, err error) {
	u.ID, once.ID = id, id
	if err := d.gate.Exists(ctx, d.root, id); err != nil {
		return u, once, err
	}
	entries, err := d.root.FS.ReadDir(layout.SessionDir(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return u, once, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		return u, once, layout.OpErr("du", id, err)
	}
	for _, e := range entries {
		name := layout.SessionDir(id) + "/" + e.Name()
		var kind func(*sessionstore.SessionUsage) *int64
		switch {
		case e.Name() == layout.LogFile && !e.IsDir():
			kind = func(u *sessionstore.SessionUsage) *int64 { return &u.LogBytes }
		case e.Name() == layout.ArchiveDir && e.IsDir():
			kind = func(u *sessionstore.SessionUsage) *int64 { return &u.ArchiveBytes }
		case e.Name() == layout.ForensicDir && e.IsDir():
			kind = func(u *sessionstore.SessionUsage) *int64 { return &u.ForensicBytes }
		case e.Name() == layout.BlobDir && e.IsDir():
			kind = func(u *sessionstore.SessionUsage) *int64 { return &u.BlobBytes }
		default:
			kind = func(u *sessionstore.SessionUsage) *int64 { return &u.OtherBytes }
		}
		count := func(fi fs.FileInfo) {
			n := fi.Size()
			*kind(&u) += n
			shared := vfs.Links(fi) > 1
			if shared {
				u.SharedBytes += n
				ident := vfs.IdentityOf(fi)
				if seen[ident] {
					return
				}
				if seen != nil {
					seen[ident] = true
				}
				once.SharedBytes += n
			}
			*kind(&once) += n
		}
		if e.IsDir() {
			if err = d.walkFiles(name, count); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return u, once, layout.OpErr("du", id, err)
			}
		} else if fi, err := e.Info(); err == nil {
			count(fi)
		}
	}
	for _, v := range []*sessionstore.SessionUsage{&u, &once} {
		v.TotalBytes = v.LogBytes + v.ArchiveBytes + v.ForensicBytes + v.BlobBytes + v.OtherBytes
	}
	return u, once, nil
}

// walkFiles calls fn with each file under dir. It follows no symlink (a
// link is a file of its own size).
func (d *Disk) walkFiles(dir string, fn func(fs.FileInfo)) error {
	entries, err := d.root.FS.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := d.walkFiles(dir+"/"+e.Name(), fn); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if fi, err := e.Info(); err == nil {
			fn(fi)
		}
	}
	return nil
}

// Dir returns the number of files under dir of fsys and their total
// size. It follows no symlink (a link counts as its own size).
func Dir(fsys vfs.FS, dir string) (files int, bytes int64, err error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if e.IsDir() {
			n, b, err := Dir(fsys, dir+"/"+e.Name())
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return files, bytes, err
			}
			files, bytes = files+n, bytes+b
			continue
		}
		if fi, err := e.Info(); err == nil {
			files++
			bytes += fi.Size()
		}
	}
	return files, bytes, nil
}
