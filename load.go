package sessionstore

import (
	"context"

	"github.com/sessionstore/sessionstore/session"
)

// LoadOptions tune LoadWith. The zero value loads the latest revision
// with all its content, as Load does.
type LoadOptions struct {
	// Revision is the revision to load; 0 is the latest (as Fork's rev).
	Revision uint64
	// WithoutContent leaves the part content a store keeps out of line
	// (large texts and tool outputs, images) unloaded: such a part holds a
	// session.ContentRef in its place. A listing, a summary or a look at a
	// conversation's structure needs no more, and costs no reads of that
	// content. The snapshot restores, and appending it keeps the
	// references as they are (the content stays the session's).
	WithoutContent bool
}

// ContentLoader is a Store that loads with options; LoadWith uses it when
// the store has it.
type ContentLoader interface {
	Store
	// LoadWith loads revision opts.Revision of session id (the latest for
	// 0). Errors as Load's and LoadRevision's.
	LoadWith(ctx context.Context, id session.SessionID, opts LoadOptions) (Record, error)
}

// LoadWith loads a revision of session id from s as opts say: with s's own
// LoadWith when s is a ContentLoader, else with Load or LoadRevision (a
// store without out-of-line content has nothing to leave out).
func LoadWith(ctx context.Context, s Store, id session.SessionID, opts LoadOptions) (Record, error) {
	if cl, ok := s.(ContentLoader); ok {
		return cl.LoadWith(ctx, id, opts)
	}
	return LoadAt(ctx, s, id, opts.Revision)
}
