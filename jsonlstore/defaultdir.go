package jsonlstore

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDir is the store directory the tools use when none is given:
// $SESSIONSTORE_DIR, else $XDG_DATA_HOME/sessionstore (when absolute), else
// ~/.local/share/sessionstore.
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
