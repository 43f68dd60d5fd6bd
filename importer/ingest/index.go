package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// stored is an imported session the store holds, as its summary says.
type stored struct {
	id       session.SessionID
	origin   session.Origin
	messages int
}

// index is what the store holds of one tool's imports: the sessions by
// the source file their origin names, and (Claude Code) by the session
// their continuation's ResumesLabel names.
type index struct {
	byPath  map[string][]*stored
	resumed map[string]*stored
}

// loadIndex lists st's sessions imported from tool: one listing of the
// store, whose summaries carry each session's origin. A session whose
// summary lacks it (written before summaries carried origins) is not in
// the index: its source is read again, and the import finds the session
// by its ID.
func loadIndex(ctx context.Context, st sessionstore.Store, tool string) (*index, error) {
	ix := &index{byPath: map[string][]*stored{}, resumed: map[string]*stored{}}
	q := summary.Query{Order: summary.OrderIDAsc, Limit: summary.MaxLimit}
	for page, err := range sessionstore.Pages(ctx, st, q) {
		if err != nil {
			return nil, fmt.Errorf("ingest: list the store: %w", err)
		}
		for _, it := range page.Items {
			if it.Origin == nil || it.Origin.Tool != tool {
				continue
			}
			s := &stored{id: it.ID, origin: *it.Origin, messages: it.MessageCount}
			if s.origin.Path != "" {
				ix.byPath[s.origin.Path] = append(ix.byPath[s.origin.Path], s)
			}
			if v := it.Labels[claudecode.ResumesLabel]; v != "" && tool == ClaudeCode {
				ix.resumed[v] = s
			}
		}
	}
	return ix, nil
}

// unchanged reports whether every file of src is as an imported session
// records it: the same size and SHA-256 as the origin of a session read
// from that path. Only files whose size matches are hashed, through buf.
// Safe to call concurrently.
func (ix *index) unchanged(src *source, buf []byte) (bool, error) {
	for _, f := range src.files {
		var want []string
		for _, s := range ix.byPath[f.path] {
			if s.origin.Bytes == f.size {
				want = append(want, s.origin.SHA256)
			}
		}
		if len(want) == 0 {
			return false, nil
		}
		sum, err := hashFile(src.fsys, f.name, buf)
		if err != nil {
			return false, err
		}
		found := false
		for _, w := range want {
			found = found || w == sum
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// recorded returns what the sessions of an unchanged source record of its
// files: their lines and bytes, as the import that read them counted.
func (ix *index) recorded(src *source) (lines, bytes int64) {
	for _, f := range src.files {
		for _, s := range ix.byPath[f.path] {
			if s.origin.Bytes == f.size {
				lines, bytes = lines+s.origin.Lines, bytes+s.origin.Bytes
				break
			}
		}
	}
	return lines, bytes
}

// hashFile returns the hex SHA-256 of the file name of fsys, read
// through buf.
func hashFile(fsys fs.FS, name string, buf []byte) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only: closing cannot lose data
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		return "", fmt.Errorf("ingest: read %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
