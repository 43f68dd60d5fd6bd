package layout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
)

// Root is the store root as every room of the store sees it: the file
// system below it and the settings the store was opened with (defaults
// applied). It is set once by jsonlstore.Open and never changed, so rooms
// share one *Root without locking.
type Root struct {
	// FS is the file system below the root; every path the rooms use is
	// relative to it, slash-separated.
	FS vfs.FS
	// Dir is the root's absolute path (for fslease, and reports).
	Dir string
	// MaxRecordBytes is the store's own record cap (record.Cap applied).
	MaxRecordBytes int
	// BlobThreshold is the size from which content is kept out of line
	// (blob.Threshold applied).
	BlobThreshold int
	// FullRecordsOnly makes writers write full records only.
	FullRecordsOnly bool
	// LeftoverAge is how old an unheld leftover must be before it is swept.
	LeftoverAge time.Duration
	// Logger receives notable events; never nil.
	Logger *slog.Logger
	// Now is the clock; never nil.
	Now func() time.Time
}

// Abs is the absolute path of a name inside the root (for fslease).
func (r *Root) Abs(name string) string { return filepath.Join(r.Dir, filepath.FromSlash(name)) }

// Exists reports whether session id has a directory, refusing symlinks.
func (r *Root) Exists(id session.SessionID) error {
	fi, err := r.FS.Lstat(SessionDir(id))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	case err != nil:
		return OpErr("session", id, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return OpErr("session", id, vfs.ErrSymlink)
	case !fi.IsDir():
		return OpErr("session", id, errors.New("not a directory"))
	}
	return nil
}

// WriteAll writes b to f, calling a short write an error.
func WriteAll(f vfs.File, b []byte) error {
	n, err := f.Write(b)
	if err == nil && n < len(b) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(b))
	}
	return err
}

// WriterOnly hides every method of a writer but Write (a file's ReadFrom
// among them) from io.Copy, which then copies through its own buffer.
type WriterOnly struct{ io.Writer }
