package jsonlstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// ErrNoStore is returned by OpenExisting for a root that does not exist
// or is not a directory.
var ErrNoStore = errors.New("jsonlstore: no store")

// OpenExisting opens the store rooted at dir as Open does, but never
// creates it: a missing root, or one that is not a directory, is
// ErrNoStore. It is how programs that only read or repair a store open
// it.
func OpenExisting(dir string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: it does not exist", ErrNoStore, abs)
	case errors.Is(err, syscall.ENOTDIR):
		return nil, fmt.Errorf("%w at %s: a directory above it is not a directory", ErrNoStore, abs)
	case err != nil:
		return nil, layout.OpErr("open root", "", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%w at %s: it is not a directory", ErrNoStore, abs)
	}
	return Open(abs, opts)
}
