//go:build unix

package owner

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Active reports whether Inherit can do anything in this process: whether
// it runs as root. Callers use it to skip looking up the parent directory.
func Active() bool { return os.Geteuid() == 0 }

// Inherit gives f, just created (or opened with O_CREATE) in the directory
// that parent describes, to parent's owner and group, when this process
// runs as root, f belongs to root and has a single link, and parent
// belongs to another user. Otherwise it does nothing. The link count
// check keeps root from handing over a file that a link planted in the
// directory shares with a name elsewhere.
func Inherit(f *os.File, parent fs.FileInfo) error {
	if !Active() {
		return nil
	}
	dir, ok := parent.Sys().(*syscall.Stat_t)
	if !ok || dir.Uid == 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("owner: stat %s: %w", f.Name(), err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || (!fi.IsDir() && st.Nlink != 1) || (!fi.IsDir() && !fi.Mode().IsRegular()) {
		return nil
	}
	if err := f.Chown(int(dir.Uid), int(dir.Gid)); err != nil {
		return fmt.Errorf("owner: give %s to uid %d: %w", f.Name(), dir.Uid, err)
	}
	return nil
}
