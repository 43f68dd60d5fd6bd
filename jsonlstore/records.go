package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Records yields the metadata of every record of session id in order,
// archived revisions first, as History yields records, and with the same
// checks (framing, checksum, sequence; a damaged record followed by valid
// ones ends the sequence with a *sessionstore.CorruptionError, yielded
// once, last), but without decoding payloads: its cost is reading the log
// (and archives), not decoding every snapshot. Like every read it takes no
// lease and modifies nothing.
func (s *Store) Records(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.RecordInfo, error] {
	return logfile.Each(s.rawRecords(ctx, id), logfile.Placed.Info)
}

// RecordLines yields every record line of session id in order, archived
// revisions first, each with its newline, exactly as stored (a copy the
// caller may keep), with the checks of Records. It is how a session is
// copied verbatim into another store of the same record format.
func (s *Store) RecordLines(ctx context.Context, id session.SessionID) iter.Seq2[[]byte, error] {
	return logfile.Each(s.rawRecords(ctx, id), func(p logfile.Placed) []byte { return p.Rec.Line() })
}

// rawRecords yields session id's records as they are kept
// (logfile.Records), once the store is open and id valid.
func (s *Store) rawRecords(ctx context.Context, id session.SessionID) iter.Seq2[logfile.Placed, error] {
	return checked(s, ctx, id, func() iter.Seq2[logfile.Placed, error] { return logfile.Records(ctx, s.root, id) })
}
