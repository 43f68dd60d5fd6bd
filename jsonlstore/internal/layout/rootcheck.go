package layout

import (
	"fmt"
	"io/fs"
	"os"
)

// CheckRoot refuses an unsafe root; fi describes the opened root.
func CheckRoot(abs string, fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by other users (mode %v); remove their write permission (chmod go-w)", ErrUnsafeRoot, abs, perm)
	}
	euid := os.Geteuid()
	if uid, ok := ownerOf(fi); ok && euid != 0 && uid != 0 && uid != euid {
		return fmt.Errorf("%w: %s belongs to uid %d, not to this user (uid %d)", ErrUnsafeRoot, abs, uid, euid)
	}
	return nil
}
