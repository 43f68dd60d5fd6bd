package jsonlstore

import "github.com/sessionstore/sessionstore/jsonlstore/internal/layout"

// DefaultDir is the store directory the tools use when none is given:
// $SESSIONSTORE_DIR, else $XDG_DATA_HOME/sessionstore (when absolute), else
// ~/.local/share/sessionstore.
func DefaultDir() (string, error) { return layout.DefaultDir() }
