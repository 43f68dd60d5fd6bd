package create

import (
	"context"
	"fmt"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
	"github.com/sessionstore/sessionstore/session"
)

// Session is a session directory being built under a temporary name
// (the facade's Create, CreateHistory, Fork, Import): invisible to
// readers and listings until Publish renames it into place, and held
// under its lease all along, so that no sweep of leftovers takes it for
// an interrupted creation.
type Session struct {
	root  *layout.Root
	ID    session.SessionID
	Tmp   string       // the temporary directory; "" once published
	Lease lease.Handle // nil once released
	// Marked: the lease's catalog mark is made (catalogfile.Catalog.Mark).
	Marked bool
	Log    vfs.File // the log, opened write-only, O_APPEND
}

// TakeLease takes the lease of session id in directory dir (a temporary
// one), without waiting, and makes its catalog mark (marked): the
// facade's, which owns the catalog.
type TakeLease func(ctx context.Context, id session.SessionID, dir string, opts fslease.Options) (_ lease.Handle, marked bool, _ error)

// Start makes the temporary directory of a new session id in root, takes
// its lease with take and opts (the creator is its first holder,
// generation 1), creates its empty log and records its record cap
// maxRecord in its settings.json. On an error nothing is left.
func Start(ctx context.Context, root *layout.Root, id session.SessionID, take TakeLease, opts fslease.Options, maxRecord int) (_ *Session, err error) {
	if _, err := root.FS.Lstat(layout.SessionDir(id)); err == nil {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
	}
	b := &Session{root: root, ID: id, Tmp: layout.TmpDirPrefix + string(id) + "-" + layout.RandomSuffix()}
	if err := root.FS.Mkdir(b.Tmp, layout.DirPerm); err != nil {
		return nil, layout.OpErr("create", id, err)
	}
	defer func() {
		if err != nil {
			b.Abort(ctx)
		}
	}()
	// The lease is taken in the temporary directory, before anyone can see
	// the session, so the creator is its first holder (generation 1). Its
	// record need not be durable before Publish syncs it and the directory
	// (DirSynced): a crash before leaves only the temporary directory.
	opts.DirSynced = true
	if b.Lease, b.Marked, err = take(ctx, id, b.Tmp, opts); err != nil {
		return nil, layout.OpErr("create", id, fmt.Errorf("lease: %w", err))
	}
	if b.Log, err = root.FS.OpenFile(b.Tmp+"/"+layout.LogFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, layout.FilePerm); err != nil {
		return nil, layout.OpErr("create", id, err)
	}
	if err := root.RecordNewCap(b.Tmp, maxRecord); err != nil { // synced with the directory, before Publish
		return nil, layout.OpErr("create", id, err)
	}
	return b, nil
}

// Abort undoes what Publish has not made visible: it closes the log,
// releases the lease and removes the temporary directory.
func (b *Session) Abort(ctx context.Context) {
	if b.Log != nil {
		_ = b.Log.Close() // the session is being abandoned: nothing written matters
		b.Log = nil
	}
	if b.Lease != nil {
		_ = b.Lease.Release(context.WithoutCancel(ctx))
		b.Lease = nil
	}
	if b.Tmp != "" {
		_ = b.root.FS.RemoveAll(b.Tmp)
		b.Tmp = ""
	}
}

// Publish makes the session visible, atomically (layout.Root.Publish).
// On error the caller aborts, which no longer removes a directory that
// was published.
func (b *Session) Publish() error {
	published, err := b.root.Publish(b.Tmp, b.ID, b.Lease)
	if published {
		b.Tmp = "" // nothing to remove any more
	}
	return err
}
