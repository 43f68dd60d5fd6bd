package jsonlstore

import (
	"context"
	"io"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Export writes session id to w.
//
// By default it writes every revision, oldest first, as JSON Lines: one
// compact object per revision, keys in this order,
//
//	{"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{…}}
//
// where snapshot is the sessnap snapshot byte for byte as the writer encoded
// it (see sessionstore.ExportLine): a full record's payload, or what a delta
// record rebuilds. Records are checked as History checks them and every
// payload must decode; at the first corrupt record Export stops and returns a
// *sessionstore.CorruptionError, after writing the revisions before it. An
// uncommitted tail is not part of the history and is not written.
//
// With latestOnly it writes only the latest revision's snapshot, indented
// JSON followed by a newline — the document `jq` users want, without the
// envelope.
//
// Export takes no lease and modifies nothing. Errors: those of Load and
// History, and w's.
func (s *Store) Export(ctx context.Context, id session.SessionID, w io.Writer, latestOnly bool) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return logfile.Export(ctx, s.root, id, w, latestOnly)
}
