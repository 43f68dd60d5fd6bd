package compact

import (
	"fmt"
	"io"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// replaceLog writes the kept records [cut, size) of v into a new log and
// renames it over log.jsonl, then points h at it. Errors after the rename
// was attempted fail the holder: whether the new log is durable is then
// unknown.
func replaceLog(fsys vfs.FS, id session.SessionID, h Holder, v *logfile.View, cut int64) error {
	if _, err := WriteLog(fsys, id, "compact", func(out io.Writer) error {
		_, err := io.Copy(out, io.NewSectionReader(v.F, cut, v.Size-cut))
		return err
	}); err != nil {
		return layout.OpErr("compact", id, err)
	}
	fail := func(err error) error {
		h.Fail(err)
		return layout.OpErr("compact", id, fmt.Errorf("%w: %w", sessionstore.ErrWriterFailed, err))
	}
	if err := fsys.SyncDir(layout.SessionDir(id)); err != nil {
		return fail(err)
	}
	nf, err := fsys.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(err)
	}
	fi, err := nf.Stat()
	if err != nil || fi.Size() != v.Size-cut {
		_ = nf.Close()
		return fail(fmt.Errorf("new log has an unexpected size"))
	}
	h.Replaced(nf, vfs.IdentityOf(fi), cut)
	return nil
}

// PublishLog writes a new log for session id with fill (WriteLog) and
// syncs the session directory: a crash leaves the old log or the new one.
// It returns the new log's size. The caller holds the lease.
func PublishLog(fsys vfs.FS, id session.SessionID, what string, fill func(w io.Writer) error) (int64, error) {
	n, err := WriteLog(fsys, id, what, fill)
	if err != nil {
		return 0, err
	}
	if err := fsys.SyncDir(layout.SessionDir(id)); err != nil {
		return n, fmt.Errorf("sync session directory: %w", err)
	}
	return n, nil
}

// WriteLog writes a new log for session id with fill, beside the old one
// (a temporary name that a holder's sweep removes if a crash leaves it),
// syncs it and renames it over log.jsonl, and returns its size. The
// rename is durable once the caller syncs the session directory. The
// caller holds the lease.
func WriteLog(fsys vfs.FS, id session.SessionID, what string, fill func(w io.Writer) error) (int64, error) {
	tmp := layout.SessionDir(id) + "/." + layout.LogFile + "." + what + "-" + layout.RandomSuffix() + layout.TmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return 0, err
	}
	cw := &archive.CountingWriter{W: layout.WriterOnly{Writer: f}}
	err = fill(cw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return 0, fmt.Errorf("write new log: %w", err)
	}
	if err := fsys.Rename(tmp, layout.LogPath(id)); err != nil {
		_ = fsys.Remove(tmp)
		return 0, fmt.Errorf("replace log: %w", err)
	}
	return cw.N, nil
}
