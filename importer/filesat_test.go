package importer_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
)

// FilesAt finds the matching regular files exactly depth directories
// down, directory by directory in lexical order, and fails only when the
// root cannot be read.
func TestFilesAt(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("{}\n")}
	fsys := fstest.MapFS{
		"top.jsonl":          file, // depth 0
		"b/one.jsonl":        file,
		"b/skip.txt":         file,
		"a/two.jsonl":        file,
		"a/x/three.jsonl":    file, // depth 2
		"a/x/y/four.jsonl":   file, // depth 3
		"c/link.jsonl":       &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("../top.jsonl")},
		"c/dir.jsonl/z.json": file, // a directory named like a match
	}
	jsonl := func(n string) bool { return strings.HasSuffix(n, ".jsonl") }
	for depth, want := range [][]string{
		{"top.jsonl"},
		{"a/two.jsonl", "b/one.jsonl"},
		{"a/x/three.jsonl"},
		{"a/x/y/four.jsonl"},
		nil,
	} {
		got, err := importer.FilesAt(fsys, depth, jsonl)
		require.NoError(t, err)
		require.Equal(t, want, got, "depth %d", depth)
	}
	_, err := importer.FilesAt(fstest.MapFS{"f": file}, 1, jsonl)
	require.NoError(t, err, "a root without directories holds no files at depth 1")
	sub, err := fs.Sub(fsys, "missing")
	require.NoError(t, err)
	for depth := range 3 {
		_, err = importer.FilesAt(sub, depth, jsonl)
		require.ErrorIs(t, err, fs.ErrNotExist, "depth %d: the root cannot be read", depth)
	}
}
