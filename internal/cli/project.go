package cli

import (
	"os"
	"path/filepath"
)

// ProjectOf returns the project directory dir belongs to: the nearest of
// dir and its ancestors that holds a .git entry (a repository's top level,
// or a git worktree's, whose .git is a file), else dir itself. dir is made
// absolute and cleaned first; symbolic links are not resolved, so the
// project is spelled as the path that led to it.
func ProjectOf(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return abs, nil
		}
		d = up
	}
}
