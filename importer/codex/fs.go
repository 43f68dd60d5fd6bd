package codex

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/importer"
)

// Codex keeps one rollout per thread in ~/.codex/sessions:
//
//	YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread id>.jsonl
//
// The functions below read that layout from an fs.FS rooted at the
// sessions directory; they never write.

// Discover returns the rollouts of fsys, a Codex sessions directory, in
// lexical (and so time) order: the regular files
// "YYYY/MM/DD/rollout-*.jsonl". Links are not followed, and a directory
// that cannot be read is left out (as fs.Glob leaves it).
func Discover(fsys fs.FS) ([]string, error) {
	out, err := importer.FilesAt(fsys, 3, func(n string) bool { // YYYY/MM/DD/rollout-*.jsonl
		return strings.HasPrefix(n, "rollout-") && strings.HasSuffix(n, ".jsonl")
	})
	if err != nil {
		return nil, fmt.Errorf("codex: discover: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// Load reads the rollout name of fsys, recording the path. A rollout that
// names no thread takes the thread ID its file name ends with.
func Load(fsys fs.FS, name string, opts Options) (*importer.Transcript, error) {
	t, err := importer.ParseFile(fsys, name, func(r io.Reader) (*importer.Transcript, error) { return Parse(r, opts) })
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if t.SourceID == "" {
		t.SourceID = ThreadIDOf(name)
	}
	return t, nil
}

// LoadAll reads every rollout of fsys (Discover, Load) and attaches each
// sub-agent's thread to its parent's (importer.Nest); it returns the
// others.
func LoadAll(fsys fs.FS, opts Options) ([]*importer.Transcript, error) {
	names, err := Discover(fsys)
	if err != nil {
		return nil, err
	}
	ts := make([]*importer.Transcript, 0, len(names))
	for _, n := range names {
		t, err := Load(fsys, n, opts)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return importer.Nest(ts), nil
}

// ThreadIDOf returns the thread ID at the end of a rollout's name (the
// last five dash-separated fields of a UUID), or "": the thread Load
// gives a rollout that names none, and how a sub-agent's thread finds its
// parent's rollout among files not read yet.
func ThreadIDOf(name string) string {
	base := strings.TrimSuffix(path.Base(name), ".jsonl")
	fields := strings.Split(base, "-")
	if len(fields) < 5 {
		return ""
	}
	return strings.Join(fields[len(fields)-5:], "-")
}
