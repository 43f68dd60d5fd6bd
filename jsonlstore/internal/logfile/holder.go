package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// What a holder does to a session directory under a freshly taken lease,
// before it writes: check that it may write there, sweep what torn
// writes left, and keep the bytes recovery or repair cuts.

// CheckWritable runs under a freshly taken lease, before anything is
// written: the session directory holds no symlink and its log is one a
// holder may write to (checked again here: it may have changed since
// checkLog ran without the lease).
func CheckWritable(root *layout.Root, id session.SessionID) error {
	if err := checkNoSymlinks(root.FS, id); err != nil {
		return err
	}
	return CheckLog(root, id)
}

// checkNoSymlinks refuses a session directory that contains a symlink: a
// session holds only regular files and directories, so a link is tampering
// or a hostile copy, and no holder writes into such a directory.
func checkNoSymlinks(fsys vfs.FS, id session.SessionID) error {
	entries, err := fsys.ReadDir(layout.SessionDir(id))
	if err != nil {
		return layout.OpErr("session", id, err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return layout.OpErr("session", id, fmt.Errorf("%s: %w", e.Name(), vfs.ErrSymlink))
		}
	}
	return nil
}

// SweepSession removes leftover temporary files in a session directory
// (torn summary and lease replacements, torn blobs); called under the
// lease.
func SweepSession(fsys vfs.FS, id session.SessionID) []string {
	entries, err := fsys.ReadDir(layout.SessionDir(id))
	if err != nil {
		return nil
	}
	var swept []string
	for _, e := range entries {
		name := e.Name()
		if layout.IsSessionTemp(name) {
			p := layout.SessionDir(id) + "/" + name
			if fsys.Remove(p) == nil {
				swept = append(swept, p)
			}
		}
	}
	// Temporary blob files: a blob being written when its writer died.
	if entries, err := fsys.ReadDir(blobfile.Dir(id)); err == nil {
		for _, e := range entries {
			if p := blobfile.Dir(id) + "/" + e.Name(); blobfile.IsTemp(e.Name()) && fsys.Remove(p) == nil {
				swept = append(swept, p)
			}
		}
	}
	return swept
}

// SaveForensic copies n bytes of v from off into a new file under the
// session's forensic directory, durably (file and directory synced), and
// returns its path relative to the root. Removed bytes are never lost: the
// caller removes nothing unless this succeeds. A copy that fails (a full
// disk) is removed again, so a failed recovery leaves nothing behind.
// Callers never pass more than a record's worth (record.TailLimit) for a
// tail; a repair's cut is bounded by the log.
func SaveForensic(root *layout.Root, id session.SessionID, what string, off int64, v *View, n int64) (_ string, err error) {
	fsys := root.FS
	dir := layout.SessionDir(id) + "/" + layout.ForensicDir
	created := false
	if err := fsys.Mkdir(dir, layout.DirPerm); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	name := dir + "/" + what + "-" + strconv.FormatInt(off, 10) + "-" + root.Now().UTC().Format("20060102T150405.000000000Z") + ".bin"
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = fsys.Remove(name) // a partial copy is no copy
		}
	}()
	buf := make([]byte, min(n, 1<<20))
	for done := int64(0); done < n; {
		k := min(int64(len(buf)), n-done)
		if _, err := v.F.ReadAt(buf[:k], off+done); err != nil {
			_ = f.Close()
			return "", record.ErrShrunk // the view promised these bytes
		}
		if err := layout.WriteAll(f, buf[:k]); err != nil {
			_ = f.Close()
			return "", err
		}
		done += k
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err == nil && created {
		err = fsys.SyncDir(layout.SessionDir(id))
	}
	return name, err
}
