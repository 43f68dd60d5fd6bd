package sessionstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sessionstore/sessionstore/internal/export"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// ExportLine is one line of an export, for programs that read it back
// (the JSON keys are the contract).
type ExportLine struct {
	Revision   uint64    `json:"revision"`
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
	// Schema is the sessnap schema version of the record's writer.
	Schema int `json:"schema"`
	// Snapshot is the sessnap snapshot exactly as stored (a newer writer's
	// unknown keys included).
	Snapshot json.RawMessage `json:"snapshot"`
}

// Exporter is a Store that exports sessions from their stored bytes.
// Export uses it when the store has it.
type Exporter interface {
	Store
	// Export writes session id to w: by default every revision, oldest
	// first, as JSON Lines (one ExportLine a line), with the stored snapshot
	// byte for byte, stopping at the first record that fails its checks
	// (a *CorruptionError, after the revisions before it); with
	// latestOnly, the latest snapshot alone, as indented JSON and a
	// newline. It takes no lease and modifies nothing.
	Export(ctx context.Context, id session.SessionID, w io.Writer, latestOnly bool) error
}

// Export writes session id of s to w as Exporter's Export does: with s's
// own Export when s is an Exporter, else from its Load or History, each
// snapshot encoded again with sessnap.Marshal (so a newer writer's unknown
// keys are not kept).
func Export(ctx context.Context, s Store, id session.SessionID, w io.Writer, latestOnly bool) error {
	if e, ok := s.(Exporter); ok {
		return e.Export(ctx, id, w, latestOnly)
	}
	if latestOnly {
		rec, err := s.Load(ctx, id)
		if err != nil {
			return err
		}
		b, err := sessnap.Marshal(rec.Snapshot)
		if err != nil {
			return err
		}
		if b, err = export.Indent(b); err != nil {
			return fmt.Errorf("sessionstore: export %s: %w", id, err)
		}
		_, err = w.Write(b)
		return err
	}
	var buf []byte
	for rec, err := range s.History(ctx, id) {
		if err != nil {
			return err
		}
		b, err := sessnap.Marshal(rec.Snapshot)
		if err != nil {
			return err
		}
		buf = export.AppendLine(buf[:0], rec.Revision, rec.Generation, rec.Time, rec.SchemaVersion, b)
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("sessionstore: export %s: %w", id, err)
		}
	}
	return nil
}
