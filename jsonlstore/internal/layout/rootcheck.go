package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// CheckRoot refuses an unsafe root; fi describes the opened root.
func CheckRoot(abs string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by other users (mode %v); remove their write permission (chmod go-w)", maintenance.ErrUnsafeRoot, abs, perm)
	}
	euid := os.Geteuid()
	if uid, ok := ownerOf(fi); ok && euid != 0 && uid != 0 && uid != euid {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user (uid %d)", maintenance.ErrUnsafeRoot, abs, uid, euid)
	}
	return nil
}

// OpenRoot opens the store root at abs (an absolute path), creating it
// (DirPerm) if needed, and refuses (maintenance.ErrUnsafeRoot) a root that other
// users may write or that belongs to another user.
func OpenRoot(abs string) (*os.Root, error) {
	if err := os.MkdirAll(abs, DirPerm); err != nil { // the caller's choice; below it every path goes through os.Root
		return nil, OpErr("create root", "", err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, OpErr("open root", "", err)
	}
	if !fi.IsDir() {
		return nil, PathErr("open", "", abs, errors.New("it is not a directory"))
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, OpErr("open root", "", err)
	}
	// Checked on the opened directory, not the path, so that it is the
	// directory the store will use.
	if fi, err = root.Stat("."); err == nil {
		err = CheckRoot(abs, fi)
	}
	if err != nil {
		_ = root.Close() // refused: the reason is the error that matters
		return nil, OpErr("open root", "", err)
	}
	return root, nil
}

// DefaultDir is the store directory the tools use when none is given:
// $SESSIONSTORE_DIR, else $XDG_DATA_HOME/sessionstore (when absolute),
// else ~/.local/share/sessionstore.
func DefaultDir() (string, error) {
	if d := os.Getenv("SESSIONSTORE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sessionstore"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no store directory: use --dir, or set SESSIONSTORE_DIR (%w)", err)
	}
	return filepath.Join(home, ".local", "share", "sessionstore"), nil
}

// CheckExisting refuses (maintenance.ErrNoStore) a store root abs that
// does not exist or is not a directory, for the programs that open a
// store only if it is there.
func CheckExisting(abs string) error {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w at %s: it does not exist", maintenance.ErrNoStore, abs)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w at %s: a directory above it is not a directory", maintenance.ErrNoStore, abs)
	case err != nil:
		return OpErr("open root", "", err)
	case !fi.IsDir():
		return fmt.Errorf("%w at %s: it is not a directory", maintenance.ErrNoStore, abs)
	}
	return nil
}
