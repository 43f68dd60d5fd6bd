package searchindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchindex/searchdb"
	"github.com/sessionstore/sessionstore/session"
)

// The states of the search index Verify reports (the store's
// SearchIndexState says what each means).
const (
	stateSound        = "sound"
	stateMissing      = "missing"
	stateDamaged      = "damaged"
	stateOtherVersion = "other version"
	stateUnreadable   = "unreadable"
)

// Verify implements searchhost.Index: it checks the search index (ROOT/.search/): that what is at
// its paths is what the store keeps there, that its file passes
// SQLite's quick_check (the structure of every page, and FTS5's check
// of its data), and that its schema is exactly the index's. It modifies
// nothing and is safe while agents write and search; a damaged index is
// left for the next search or `sessions reindex` to replace. It costs a
// read of the whole file. Errors: ctx's, a closed store, I/O that keeps
// it from looking.
func (x *Index) Verify(ctx context.Context) (searchhost.VerifyReport, error) {
	db, _, err := x.openSearchIndex(ctx, searchWait)
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
			return searchhost.VerifyReport{State: stateSound, Sessions: proofs}, nil
		}
	}
	switch {
	case endsStoreWide(err):
		return searchhost.VerifyReport{}, err
	case errors.Is(err, searchdb.ErrMissing):
		return searchhost.VerifyReport{State: stateMissing, Notes: []string{"no search index: the next search builds it"}}, nil
	case errors.Is(err, fs.ErrPermission):
		return searchhost.VerifyReport{State: stateUnreadable, Problems: []string{
			fmt.Sprintf("%v: searches read the logs instead; remove %s to have it rebuilt", err, x.dir)}}, nil
	case errors.Is(err, searchdb.ErrOtherVersion):
		return searchhost.VerifyReport{State: stateOtherVersion, Notes: []string{
			fmt.Sprintf("%v: the next search rebuilds it", err)}}, nil
	case searchIndexBad(err), errors.Is(err, searchdb.ErrSlow):
		return searchhost.VerifyReport{State: stateDamaged, Problems: []string{err.Error()}}, nil
	}
	return searchhost.VerifyReport{}, fmt.Errorf("jsonlstore: verify search index: %w", err)
}
