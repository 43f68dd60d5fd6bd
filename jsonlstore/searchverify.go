package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// SearchIndexState is what VerifySearch found the search index to be.
type SearchIndexState string

// The states of the search index. SearchIndexDamaged and
// SearchIndexUnreadable are problems; searches answer correctly in every
// state (they rebuild a damaged index, and read the logs where there is
// no usable one).
const (
	// SearchIndexSound: the file passes SQLite's check and its schema is
	// the index's.
	SearchIndexSound SearchIndexState = "sound"
	// SearchIndexMissing: there is none; the next search builds it.
	SearchIndexMissing SearchIndexState = "missing"
	// SearchIndexDamaged: the file fails SQLite's check, holds objects
	// that are not the index's (a trigger, a view), is of another
	// version's schema, or is not a regular file of its own. The next search or
	// `sessions reindex` replaces it with a new file.
	SearchIndexDamaged SearchIndexState = "damaged"
	// SearchIndexOtherVersion: another version of the program made it;
	// the next search replaces it with one of this version's.
	SearchIndexOtherVersion SearchIndexState = "other version"
	// SearchIndexUnreadable: this user may not read or write it (another
	// user's). Searches read the logs instead; nothing replaces it.
	SearchIndexUnreadable SearchIndexState = "unreadable"
)

// SearchVerifyReport is what VerifySearch found.
type SearchVerifyReport struct {
	State SearchIndexState `json:"state"`
	// Sessions is the number of sessions the index has rows of (sound
	// only).
	Sessions int `json:"sessions"`
	// Problems say what is wrong (damaged or unreadable).
	Problems []string `json:"problems,omitempty"`
	// Notes are no failure.
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the index has no problem.
func (r *SearchVerifyReport) OK() bool { return len(r.Problems) == 0 }

// VerifySearch checks the search index (ROOT/.search/): that what is at
// its paths is what the store keeps there, that its file passes
// SQLite's quick_check (the structure of every page, and FTS5's check
// of its data), and that its schema is exactly the index's. It modifies
// nothing and is safe while agents write and search; a damaged index is
// left for the next search or `sessions reindex` to replace. It costs a
// read of the whole file. Errors: ctx's, a closed store, I/O that keeps
// it from looking.
func (s *Store) VerifySearch(ctx context.Context) (SearchVerifyReport, error) {
	if s.closed.Load() {
		return SearchVerifyReport{}, sessionstore.ErrClosed
	}
	db, _, err := s.openSearchIndex(ctx, searchWait)
	if err == nil {
		err = db.Check(ctx)
		var proofs int
		if err == nil {
			var p map[session.SessionID]searchdb.Proof
			p, err = db.Proofs(ctx)
			proofs = len(p)
		}
		_ = db.Close() // read only
		if err == nil {
			return SearchVerifyReport{State: SearchIndexSound, Sessions: proofs}, nil
		}
	}
	switch {
	case logfile.EndsStoreWide(err):
		return SearchVerifyReport{}, err
	case errors.Is(err, searchdb.ErrMissing):
		return SearchVerifyReport{State: SearchIndexMissing, Notes: []string{"no search index: the next search builds it"}}, nil
	case errors.Is(err, fs.ErrPermission):
		return SearchVerifyReport{State: SearchIndexUnreadable, Problems: []string{
			fmt.Sprintf("%v: searches read the logs instead; remove %s to have it rebuilt", err, SearchDir)}}, nil
	case errors.Is(err, searchdb.ErrOtherVersion):
		return SearchVerifyReport{State: SearchIndexOtherVersion, Notes: []string{
			fmt.Sprintf("%v: the next search rebuilds it", err)}}, nil
	case searchIndexBad(err), errors.Is(err, searchdb.ErrSlow):
		return SearchVerifyReport{State: SearchIndexDamaged, Problems: []string{err.Error()}}, nil
	}
	return SearchVerifyReport{}, fmt.Errorf("jsonlstore: verify search index: %w", err)
}
