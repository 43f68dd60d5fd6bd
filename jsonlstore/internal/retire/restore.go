package retire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// RestoreAll restores the sessions ids in order (Restore), and stops at
// the first that fails: those before it stay restored.
func (a *Area) RestoreAll(ctx context.Context, ids ...session.SessionID) (maintenance.RestoreReport, error) {
	rep := maintenance.RestoreReport{Restored: []maintenance.RetiredSession{}}
	for _, id := range ids {
		rs, err := a.Restore(ctx, id)
		if err != nil {
			return rep, err
		}
		rep.Restored = append(rep.Restored, rs)
	}
	return rep, nil
}

// Restore brings session id back from the area: it reads the pack into a
// temporary session directory (.tmp-<id>-<random>, its lease lock held
// from its first byte), checking every member and syncing every file and
// directory, publishes it with a rename that never replaces (synced),
// records the event, and only then removes the pack (synced). When the
// session is live already and continues the retired copy (a retire or
// restore stopped between its steps), the pack is removed and the live
// copy kept (Reason "already live").
func (a *Area) Restore(ctx context.Context, id session.SessionID) (maintenance.RetiredSession, error) {
	var out maintenance.RetiredSession
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if err := sessionstore.ValidateID(id); err != nil {
		return out, err
	}
	fsys := a.root.FS
	pack := PackPath(id)
	if _, err := fsys.Lstat(pack); errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("%w: %s", ErrNotRetired, id)
	}
	unlockArea, err := a.lockArea()
	if err != nil {
		return out, err
	}
	defer unlockArea()
	pi, err := fsys.Lstat(pack)
	if errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("%w: %s", ErrNotRetired, id)
	} else if err != nil {
		return out, layout.OpErr("restore", id, err)
	}
	if _, err := fsys.Lstat(layout.SessionDir(id)); err == nil {
		if err := a.continues(id); err != nil {
			return out, err
		}
		h, err := a.Header(id)
		if err != nil {
			return out, err
		}
		if err := a.finishRestore(id, h, pi.Size(), "already live"); err != nil {
			return out, err
		}
		return maintenance.RetiredSession{ID: id, Summary: h.Summary, RetiredAt: h.RetiredAt, Bytes: h.Bytes, PackBytes: pi.Size(), Reason: "already live"}, nil
	}
	tmp := layout.TmpDirPrefix + string(id) + "-" + layout.RandomSuffix()
	h, unlock, err := a.unpack(id, tmp)
	if unlock != nil {
		defer unlock()
	}
	if err != nil {
		_ = fsys.RemoveAll(tmp)
		return out, layout.OpErr("restore", id, err)
	}
	if err := fsys.RenameNoReplace(tmp, layout.SessionDir(id)); err != nil {
		_ = fsys.RemoveAll(tmp)
		if errors.Is(err, fs.ErrExist) {
			return out, fmt.Errorf("%w: %s was created while it was restored", ErrConflict, id)
		}
		return out, layout.OpErr("restore", id, err)
	}
	if err := fsys.SyncDir("."); err != nil {
		return out, layout.OpErr("restore", id, err)
	}
	if err := a.finishRestore(id, h, pi.Size(), "named"); err != nil {
		return out, err
	}
	return maintenance.RetiredSession{ID: id, Summary: h.Summary, RetiredAt: h.RetiredAt, Bytes: h.Bytes, PackBytes: pi.Size()}, nil
}

// finishRestore records the restore of live session id and removes its
// pack.
func (a *Area) finishRestore(id session.SessionID, h Header, size int64, reason string) error {
	fsys := a.root.FS
	digest, _, err := hashFile(fsys, PackPath(id))
	if err != nil {
		return layout.OpErr("restore", id, err)
	}
	ev := Event{Op: OpRestore, ID: id, At: a.root.Now().UTC().Round(0), Bytes: h.Bytes, PackBytes: size, PackSHA256: digest, Reason: reason}
	if err := appendEvent(fsys, ev); err != nil {
		return layout.OpErr("restore: record in "+JournalFile, id, err)
	}
	if err := fsys.Remove(PackPath(id)); err != nil {
		return layout.OpErr("restore: remove the retired copy", id, err)
	}
	if err := fsys.SyncDir(Dir); err != nil {
		return layout.OpErr("restore: remove the retired copy", id, err)
	}
	return nil
}

// unpack reads session id's pack into the new directory dir, syncing
// every file and directory. unlock, when not nil, drops the lease lock
// it took on dir's lease.lock as soon as it was written.
func (a *Area) unpack(id session.SessionID, dir string) (_ Header, unlock func(), _ error) {
	r, done, err := a.openPack(id)
	if err != nil {
		return Header{}, nil, err
	}
	defer done()
	onLease := func() error {
		u, held, err := a.lock(dir + "/" + leaseLock)
		switch {
		case err != nil:
			return err
		case held:
			return ErrHeld
		}
		unlock = u
		return nil
	}
	err = extract(r, a.root.FS, dir, true, onLease)
	return r.Header, unlock, err
}

// Unpack writes session id's pack into directory dir of fsys (not synced:
// for a view in memory, such as a search of the retired sessions) and
// returns its Header.
func (a *Area) Unpack(id session.SessionID, fsys vfs.FS, dir string) (Header, error) {
	r, done, err := a.openPack(id)
	if err != nil {
		return Header{}, err
	}
	defer done()
	err = extract(r, fsys, dir, false, nil)
	return r.Header, err
}

// extract writes the entries of r below dir (made here) in fsys, syncing
// each file and then each directory, deepest first, when sync is set.
// onLease, if set, runs once lease.lock is written.
func extract(r *Reader, fsys vfs.FS, dir string, sync bool, onLease func() error) error {
	if err := fsys.Mkdir(dir, layout.DirPerm); err != nil {
		return err
	}
	dirs := []string{dir}
	for r.Next() {
		e := r.Entry()
		name := path.Join(dir, e.Name)
		if e.Dir {
			if err := fsys.Mkdir(name, e.Mode); err != nil {
				return err
			}
			dirs = append(dirs, name)
			continue
		}
		if err := writeFile(fsys, name, e.Mode, r.Body(), sync); err != nil {
			return err
		}
		if e.Name == leaseLock && onLease != nil {
			if err := onLease(); err != nil {
				return err
			}
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if sync {
		for _, d := range slices.Backward(dirs) {
			if err := fsys.SyncDir(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(fsys vfs.FS, name string, mode fs.FileMode, body io.Reader, sync bool) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := io.Copy(f, body); err != nil {
		return err
	}
	if sync {
		return f.Sync()
	}
	return nil
}
