package logfile

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Current returns session id's summary without its lease status, with the
// state of the log it describes: from summary.json when it was written for
// exactly the log on disk (same file identity and size, and the record it
// names still carries its revision), else computed from the log's tail
// (FromLog). Its cost does not depend on the length of the history.
func Current(ctx context.Context, root *layout.Root, id session.SessionID) (summary.Summary, vfs.State, error) {
	if sf, ok := ReadSummary(root.FS, id); ok {
		if fi, err := root.FS.Lstat(layout.LogPath(id)); err == nil && sf.Matches(fi) && revisionAt(root.FS, id, sf.LastOffset) == sf.Revision {
			sum := sf.Summary
			sum.Sizes.LogBytes = fi.Size()
			return sum, vfs.StateOf(fi), nil
		}
	}
	return FromLog(ctx, root, id)
}

// FromLog computes session id's summary from its log's tail, with the
// state of the log it read. Errors: ctx's, ErrInvalidID, and Read's.
func FromLog(ctx context.Context, root *layout.Root, id session.SessionID) (summary.Summary, vfs.State, error) {
	if err := ctx.Err(); err != nil {
		return summary.Summary{}, vfs.State{}, err
	}
	if err := sessionstore.ValidateID(id); err != nil {
		return summary.Summary{}, vfs.State{}, err
	}
	var sum summary.Summary
	var st vfs.State
	err := Read(ctx, root, id, func(v *View) error {
		var err error
		_, sum, err = LatestSummary(root.FS, id, v)
		st = vfs.State{Identity: v.ID, Size: v.Size, MTime: v.Mtime}
		return err
	})
	return sum, st, err
}

// revisionAt reads the revision of the record at off, or 0.
func revisionAt(fsys vfs.FS, id session.SessionID, off int64) uint64 {
	f, err := fsys.OpenFile(layout.LogPath(id), layout.RDONLY, 0)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read-only
	var buf [64]byte
	n, _ := f.ReadAt(buf[:], off)
	rev, ok := record.PeekRev(buf[:n])
	if !ok {
		return 0
	}
	return rev
}
