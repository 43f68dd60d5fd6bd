package retire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Names of the retired area, relative to the store root.
const (
	// Dir is the retired area.
	Dir = ".retired"
	// JournalFile is the journal of retires and restores.
	JournalFile = Dir + "/journal.jsonl"
	// LockFile is the area's lock: held by whoever retires or restores.
	LockFile = Dir + "/lock"
	// PolicyFile is the retention policy, at the store's root.
	PolicyFile = ".retention.json"
	// PackSuffix ends a pack's name: <id>.tar.zst.
	PackSuffix = ".tar.zst"
	// tmpPackPrefix starts a pack being written: .pack-<id>-<random>.tmp.
	tmpPackPrefix = ".pack-"
)

// PackPath is session id's pack.
func PackPath(id session.SessionID) string { return Dir + "/" + string(id) + PackSuffix }

// Locker takes, without waiting longer than a reader's lease probe holds
// a shared lock (a few tries, milliseconds apart: the store's), the
// exclusive lock on the existing file at name (relative to the root): the
// store's lease lock of a session, or the area's lock. held reports that
// someone else has it.
type Locker func(name string) (unlock func(), held bool, err error)

// Area is a store's retired area.
type Area struct {
	root *layout.Root
	lock Locker
}

// New returns the retired area of the store at root, whose locks lock
// takes (tried again for a moment while held).
func New(root *layout.Root, lock Locker) *Area { return &Area{root: root, lock: lock} }

// lockArea makes the area (durably) if it is missing and takes its lock:
// one retire or restore at a time, across processes, so that the two
// copies of a session are never written by two of them at once.
func (a *Area) lockArea() (func(), error) {
	fsys := a.root.FS
	if err := fsys.Mkdir(Dir, layout.DirPerm); err == nil {
		if err := fsys.SyncDir("."); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	f, err := fsys.OpenFile(LockFile, os.O_RDWR|os.O_CREATE, layout.FilePerm)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	unlock, held, err := a.lock(LockFile)
	switch {
	case err != nil:
		return nil, err
	case held:
		return nil, ErrBusy
	}
	return unlock, nil
}

// Choose is called by Retire with the session's lease lock held, so that
// the choice is made on what will be retired: it returns the session's
// summary (kept in the pack's Header) and the reason for retiring it, or
// an error to leave it live.
type Choose func() (sum summary.Summary, reason string, err error)

// Retire moves session id into the area: it takes the session's lease
// lock (ErrHeld when a live holder has it), asks choose, writes the
// pack to a temporary file, syncs it, reads it back whole against the
// session's files, publishes it by a rename (synced), records the event,
// and only then renames the live directory away (synced) and removes it.
// A crash leaves the session live, or live and retired with the same
// bytes (the next Retire or Restore finishes), or retired.
func (a *Area) Retire(ctx context.Context, id session.SessionID, choose Choose) (maintenance.RetiredSession, error) {
	var out maintenance.RetiredSession
	if err := ctx.Err(); err != nil {
		return out, err
	}
	unlockArea, err := a.lockArea()
	if err != nil {
		return out, err
	}
	defer unlockArea()
	fsys := a.root.FS
	dir := layout.SessionDir(id)
	unlock, held, err := a.lock(dir + "/" + leaseLock)
	switch {
	case err != nil:
		return out, err
	case held:
		return out, ErrHeld
	}
	defer unlock()
	// Under the lease lock nobody changes the session's files: writers,
	// compaction and repair all hold it (readers never write).
	sum, reason, err := choose()
	if err != nil {
		return out, err
	}
	pack := PackPath(id)
	if _, err := fsys.Lstat(pack); err == nil {
		// An earlier retire or restore stopped with both copies: the
		// live one must continue the retired one's history.
		if err := a.continues(id); err != nil {
			return out, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return out, err
	}
	a.sweepTemps(id)
	entries, total, err := Scan(fsys, dir)
	if err != nil {
		return out, layout.OpErr("retire", id, err)
	}
	sum.Lease = summary.LeaseStatus{}
	h := Header{V: HeaderVersion, ID: id, RetiredAt: a.root.Now().UTC().Round(0), Summary: sum, Bytes: total, Entries: entries}
	tmp := Dir + "/" + tmpPackPrefix + string(id) + "-" + layout.RandomSuffix() + layout.TmpSuffix
	size, digest, err := a.writeTemp(tmp, &h)
	if err != nil {
		_ = fsys.Remove(tmp)
		return out, layout.OpErr("retire", id, err)
	}
	if err := fsys.Rename(tmp, pack); err != nil {
		_ = fsys.Remove(tmp)
		return out, layout.OpErr("retire", id, err)
	}
	if err := fsys.SyncDir(Dir); err != nil {
		return out, layout.OpErr("retire", id, err)
	}
	ev := Event{Op: OpRetire, ID: id, At: h.RetiredAt, Bytes: total, PackBytes: size, PackSHA256: digest, Reason: reason}
	if err := appendEvent(fsys, ev); err != nil {
		// Not recorded: take the pack back, so that the session is only
		// live (best effort: a pack left is the same bytes, finished by
		// the next retire or restore).
		if fsys.Remove(pack) == nil {
			_ = fsys.SyncDir(Dir)
		}
		return out, layout.OpErr("retire: record in "+JournalFile, id, err)
	}
	trash := layout.TrashPrefix + string(id) + "-" + layout.RandomSuffix()
	if err := fsys.RenameNoReplace(dir, trash); err != nil {
		return out, layout.OpErr("retire: remove the live copy", id, err)
	}
	if err := fsys.SyncDir("."); err != nil {
		return out, layout.OpErr("retire: remove the live copy", id, err)
	}
	// Retired, durably. A trash left by a crash here is swept by repair.
	_ = fsys.RemoveAll(trash)
	return maintenance.RetiredSession{ID: id, Summary: sum, RetiredAt: h.RetiredAt, Bytes: total, PackBytes: size, Reason: reason}, nil
}

// writeTemp writes the pack of h to tmp, syncs it, and reads it back
// whole: every member must be as h says. It returns the pack's size and
// SHA-256.
func (a *Area) writeTemp(tmp string, h *Header) (int64, string, error) {
	fsys := a.root.FS
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = f.Close() }()
	hs := sha256.New()
	cw := &archive.CountingWriter{W: io.MultiWriter(f, hs)}
	if err := writePack(cw, fsys, layout.SessionDir(h.ID), h); err != nil {
		return 0, "", err
	}
	if err := f.Sync(); err != nil {
		return 0, "", err
	}
	if err := a.check(tmp, h); err != nil {
		return 0, "", err
	}
	return cw.N, hex.EncodeToString(hs.Sum(nil)), nil
}

// check reads the pack at name whole: it must hold h's entries, each
// with the bytes h says.
func (a *Area) check(name string, h *Header) error {
	f, err := a.root.FS.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	r, err := NewReader(f, name, h.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	if !slices.Equal(r.Header.Entries, h.Entries) || r.Header.Bytes != h.Bytes {
		return &CorruptError{File: name, Err: errors.New("its header is not the one written")}
	}
	for r.Next() {
	}
	return r.Err()
}

// sweepTemps removes the packs of session id that a crashed retire left
// half written (the caller holds the area's lock: nobody is writing one).
func (a *Area) sweepTemps(id session.SessionID) {
	names, err := vfs.ReadDirNames(a.root.FS, Dir)
	if err != nil {
		return
	}
	prefix := tmpPackPrefix + string(id) + "-"
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			if suffix, ok := strings.CutSuffix(rest, layout.TmpSuffix); ok && layout.IsSuffix(suffix) {
				_ = a.root.FS.Remove(Dir + "/" + n)
			}
		}
	}
}

// continues returns nil when session id's live log begins with its
// retired log (the live copy continues the retired one's history, or is
// the same), ErrConflict when it does not.
func (a *Area) continues(id session.SessionID) error {
	r, done, err := a.openPack(id)
	if err != nil {
		return err
	}
	defer done()
	live, err := a.root.FS.OpenFile(layout.LogPath(id), layout.RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = live.Close() }()
	same := false
	for r.Next() {
		if e := r.Entry(); e.Name == layout.LogFile && !e.Dir {
			same, err = prefixOf(r.Body(), live, e.Size)
			if err != nil {
				return err
			}
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("%w: %s: the live log does not begin with the retired one; "+
			"keep the live session (`sessions rm --retired %s` deletes the retired copy) or remove it (`sessions rm %s`) and restore",
			ErrConflict, id, id, id)
	}
	return nil
}

// prefixOf reports whether the n bytes of r are the first n bytes of f.
func prefixOf(r io.Reader, f vfs.File, n int64) (bool, error) {
	var a, b [64 << 10]byte
	var off int64
	for off < n {
		k := min(int64(len(a)), n-off)
		if _, err := io.ReadFull(r, a[:k]); err != nil {
			return false, err
		}
		m, err := f.ReadAt(b[:k], off)
		if int64(m) < k {
			if errors.Is(err, io.EOF) || err == nil {
				return false, nil
			}
			return false, err
		}
		if !bytes.Equal(a[:k], b[:k]) {
			return false, nil
		}
		off += k
	}
	return true, nil
}
