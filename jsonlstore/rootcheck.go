package jsonlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrUnsafeRoot is returned by Open for a store root that another local
// user could change: one writable by its group or by others, or owned by
// a user other than this process's (or root). Whoever can write the root
// can rename, replace or plant whole session directories, which the
// store's per-session checks cannot tell from the owner's own.
var ErrUnsafeRoot = errors.New("jsonlstore: unsafe store root")

// checkRoot refuses an unsafe root; fi describes the opened root.
func checkRoot(abs string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by other users (mode %v); remove their write permission (chmod go-w)", ErrUnsafeRoot, abs, perm)
	}
	euid := os.Geteuid()
	if uid, ok := ownerOf(fi); ok && euid != 0 && uid != 0 && uid != euid {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user (uid %d)", ErrUnsafeRoot, abs, uid, euid)
	}
	return nil
}
