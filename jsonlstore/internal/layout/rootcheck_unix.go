//go:build unix

package layout

import (
	"io/fs"
	"syscall"
)

// ownerOf returns the uid that owns the file fi describes.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
