package jsonlstore

import (
	"path/filepath"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// ErrNoStore is returned by OpenExisting for a root that does not exist
// or is not a directory.
var ErrNoStore = maintenance.ErrNoStore

// OpenExisting opens the store rooted at dir as Open does, but never
// creates it: a missing root, or one that is not a directory, is
// ErrNoStore. It is how programs that only read or repair a store open
// it.
func OpenExisting(dir string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := layout.CheckExisting(abs); err != nil {
		return nil, err
	}
	return Open(abs, opts)
}
