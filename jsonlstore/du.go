package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// DiskUsage reports the bytes each given session occupies (all sessions,
// in ID order, when none is given), and their total: apparent file sizes,
// as ls -l shows them, not allocated blocks, by kind of file (its
// log.jsonl, everything under archive/, everything under forensic/,
// everything under blobs/ as stored, and the rest: lease and summary
// files, leftovers). LeftoverBytes is what the temporary and trash
// directories at the root hold (the next repair sweeps old ones). It reads
// directory entries only, takes no lease and modifies nothing; on a live
// store the figures are a moment's. A session whose directory cannot be
// read goes into the report's Unreadable list. Errors: ErrClosed,
// ErrInvalidID, ErrNotFound for a given ID (a session deleted while
// DiskUsage lists all sessions is skipped), a root it cannot list.
func (s *Store) DiskUsage(ctx context.Context, ids ...session.SessionID) (sessionstore.UsageReport, error) {
	var rep sessionstore.UsageReport
	all, err := s.forSessions(ids, func(id session.SessionID) error {
		u, err := s.sessionDU(ctx, id)
		if err == nil {
			rep.Sessions = append(rep.Sessions, u)
			rep.Total.Add(u)
		}
		return err
	}, &rep.Unreadable)
	if err != nil {
		return rep, err
	}
	if all {
		entries, err := s.fs.ReadDir(".")
		if err != nil {
			return rep, layout.OpErr("du", "", err)
		}
		for _, e := range entries {
			if e.IsDir() && layout.IsLeftover(e.Name()) {
				if _, n, err := s.duDir(e.Name()); err == nil {
					rep.LeftoverBytes += n
				}
			}
		}
	}
	return rep, nil
}

func (s *Store) sessionDU(ctx context.Context, id session.SessionID) (sessionstore.SessionUsage, error) {
	u := sessionstore.SessionUsage{ID: id}
	if err := s.checkSession(ctx, id); err != nil {
		return u, err
	}
	entries, err := s.fs.ReadDir(layout.SessionDir(id))
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
		case e.Name() == LogFile && !e.IsDir():
			u.LogBytes += n
		case e.Name() == ArchiveDir && e.IsDir():
			u.ArchiveBytes += n
		case e.Name() == ForensicDir && e.IsDir():
			u.ForensicBytes += n
		case e.Name() == BlobDir && e.IsDir():
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
	entries, err := s.fs.ReadDir(dir)
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
