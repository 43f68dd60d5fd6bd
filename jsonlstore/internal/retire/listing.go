package retire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// openPack opens session id's pack for reading: a missing one is
// ErrNotRetired. done closes it.
func (a *Area) openPack(id session.SessionID) (_ *Reader, done func(), _ error) {
	f, err := a.root.FS.OpenFile(PackPath(id), layout.RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotRetired, id)
	}
	if err != nil {
		return nil, nil, err
	}
	r, err := NewReader(f, PackPath(id), id)
	if err != nil {
		_ = f.Close() // read-only
		return nil, nil, err
	}
	return r, func() { r.Close(); _ = f.Close() }, nil
}

// Header reads the Header of session id's pack (its first member only).
func (a *Area) Header(id session.SessionID) (Header, error) {
	r, done, err := a.openPack(id)
	if err != nil {
		return Header{}, err
	}
	done()
	return r.Header, nil
}

// Verify reads session id's pack whole: nil when every member is as its
// Header says.
func (a *Area) Verify(id session.SessionID) (Header, error) {
	r, done, err := a.openPack(id)
	if err != nil {
		return Header{}, err
	}
	defer done()
	for r.Next() {
	}
	return r.Header, r.Err()
}

// IDs lists the sessions that have a pack, in ID order.
func (a *Area) IDs() ([]session.SessionID, error) {
	names, err := vfs.ReadDirNames(a.root.FS, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []session.SessionID
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, PackSuffix); ok && sessionstore.ValidateID(session.SessionID(id)) == nil {
			ids = append(ids, session.SessionID(id))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// VerifyAll reads the packs of the given retired sessions (all when none
// are given) whole, and returns those that are damaged or missing.
func (a *Area) VerifyAll(ctx context.Context, ids ...session.SessionID) ([]summary.Unreadable, error) {
	if len(ids) == 0 {
		var err error
		if ids, err = a.IDs(); err != nil {
			return nil, err
		}
	}
	var bad []summary.Unreadable
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return bad, err
		}
		if _, err := a.Verify(id); err != nil {
			bad = append(bad, summary.Unreadable{ID: id, Reason: err.Error()})
		}
	}
	return bad, nil
}

// List yields every retired session, in ID order, from its pack's Header
// (a damaged pack: an error naming it, and the listing goes on).
func (a *Area) List(ctx context.Context) iter.Seq2[maintenance.RetiredSession, error] {
	return func(yield func(maintenance.RetiredSession, error) bool) {
		ids, err := a.IDs()
		if err != nil {
			yield(maintenance.RetiredSession{}, err)
			return
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				yield(maintenance.RetiredSession{}, err)
				return
			}
			fi, err := a.root.FS.Lstat(PackPath(id))
			if errors.Is(err, fs.ErrNotExist) {
				continue // restored meanwhile
			}
			var h Header
			if err == nil {
				h, err = a.Header(id)
			}
			if err != nil {
				if errors.Is(err, ErrNotRetired) {
					continue
				}
				if !yield(maintenance.RetiredSession{ID: id}, err) {
					return
				}
				continue
			}
			_, lerr := a.root.FS.Lstat(layout.SessionDir(id))
			rs := maintenance.RetiredSession{ID: id, Summary: h.Summary, RetiredAt: h.RetiredAt, Bytes: h.Bytes,
				PackBytes: fi.Size(), AlsoLive: lerr == nil}
			if !yield(rs, nil) {
				return
			}
		}
	}
}

// Remove deletes session id's pack, and records it: the one way a
// retired session is ever deleted (`sessions rm --retired`).
func (a *Area) Remove(ctx context.Context, id session.SessionID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fsys := a.root.FS
	if _, err := fsys.Lstat(PackPath(id)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotRetired, id)
	}
	unlockArea, err := a.lockArea()
	if err != nil {
		return err
	}
	defer unlockArea()
	fi, err := fsys.Lstat(PackPath(id))
	if err != nil {
		return layout.OpErr("rm retired", id, err)
	}
	digest, _, err := hashFile(fsys, PackPath(id))
	if err != nil {
		return layout.OpErr("rm retired", id, err)
	}
	h, herr := a.Header(id) // a damaged pack can be removed too
	ev := Event{Op: OpRemove, ID: id, At: a.root.Now().UTC().Round(0), Bytes: h.Bytes, PackBytes: fi.Size(), PackSHA256: digest}
	if herr != nil {
		ev.Reason = "damaged pack"
	}
	if err := appendEvent(fsys, ev); err != nil {
		return layout.OpErr("rm retired: record in "+JournalFile, id, err)
	}
	if err := fsys.Remove(PackPath(id)); err != nil {
		return layout.OpErr("rm retired", id, err)
	}
	return fsys.SyncDir(Dir)
}
