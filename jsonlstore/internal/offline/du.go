package offline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// LeftoverBytes is what the temporary and trash directories at the root
// hold (interrupted creations and deletions; the next repair sweeps old
// ones).
func (s *Store) LeftoverBytes() (int64, error) {
	entries, err := s.root.FS.ReadDir(".")
	if err != nil {
		return 0, layout.OpErr("du", "", err)
	}
	var total int64
	for _, e := range entries {
		if e.IsDir() && layout.IsLeftover(e.Name()) {
			if _, n, err := s.duDir(e.Name()); err == nil {
				total += n
			}
		}
	}
	return total, nil
}

// SessionUsage reports the bytes session id occupies, as jsonlstore's
// DiskUsage promises: apparent file sizes, by kind of file. It reads
// directory entries only.
func (s *Store) SessionUsage(ctx context.Context, id session.SessionID) (sessionstore.SessionUsage, error) {
	u := sessionstore.SessionUsage{ID: id}
	if err := s.checkSession(ctx, id); err != nil {
		return u, err
	}
	entries, err := s.root.FS.ReadDir(layout.SessionDir(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return u, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
		return u, layout.OpErr("du", id, err)
	}
	for _, e := range entries {
		name := layout.SessionDir(id) + "/" + e.Name()
		var n int64
		if e.IsDir() {
			if _, n, err = s.duDir(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return u, layout.OpErr("du", id, err)
			}
		} else if fi, err := e.Info(); err == nil {
			n = fi.Size()
		}
		switch {
		case e.Name() == layout.LogFile && !e.IsDir():
			u.LogBytes += n
		case e.Name() == layout.ArchiveDir && e.IsDir():
			u.ArchiveBytes += n
		case e.Name() == layout.ForensicDir && e.IsDir():
			u.ForensicBytes += n
		case e.Name() == layout.BlobDir && e.IsDir():
			u.BlobBytes += n
		default:
			u.OtherBytes += n
		}
	}
	u.TotalBytes = u.LogBytes + u.ArchiveBytes + u.ForensicBytes + u.BlobBytes + u.OtherBytes
	return u, nil
}

// duDir returns the number of files under dir and their total size. It
// follows no symlink (a link counts as its own size).
func (s *Store) duDir(dir string) (files int, bytes int64, err error) {
	entries, err := s.root.FS.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if e.IsDir() {
			n, b, err := s.duDir(dir + "/" + e.Name())
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
