//go:build !unix

package owner

import (
	"io/fs"
	"os"
)

// Active reports false: only Unix systems have a root that Inherit acts
// for.
func Active() bool { return false }

// Inherit does nothing on this system.
func Inherit(*os.File, fs.FileInfo) error { return nil }
