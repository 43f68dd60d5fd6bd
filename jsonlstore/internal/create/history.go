package create

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/sessnap"
)

// WriteHistory writes the session's revisions 1, 2, … — first, then
// each snapshot next returns until it reports no more — to its log, each
// record as an append would write it (app: deltas where they pay, large
// content into blobs), and makes them durable: nothing is visible before
// Publish, so the lines go through one buffer (a one-revision history is
// one write), and one sync of the blobs, then one of the log, follow the
// last record. Later revisions may reference the blobs earlier ones
// wrote, as an append may. It returns the last record (its envelope and
// place) and its snapshot.
func (b *Session) WriteHistory(ctx context.Context, app *appender.Appender, blobs *blobfile.Writer, first sessnap.Snapshot,
	next func() (sessnap.Snapshot, bool, error), now func() time.Time,
) (last record.Rec, latest sessnap.Snapshot, _ error) {
	id := b.ID
	bw := bufio.NewWriterSize(vfsWriter{b.Log}, 256<<10)
	gen := b.Lease.Generation()
	snap := first
	var size int64
	m := record.First(gen, now())
	for {
		if err := ctx.Err(); err != nil {
			return last, latest, err
		}
		line, err := app.Line(id, m, &snap)
		if err != nil {
			return last, latest, err
		}
		if _, err := bw.Write(line); err != nil {
			return last, latest, layout.OpErr("create", id, fmt.Errorf("write log: %w", err))
		}
		// The summary and the writer need the last record's envelope and
		// place, and its snapshot.
		last, latest = record.Rec{Meta: m, Offset: size, LineLen: int64(len(line))}, snap
		size += int64(len(line))

		var more bool
		if snap, more, err = next(); err != nil || !more {
			if err != nil {
				return last, latest, err
			}
			break
		}
		if err := blobs.CheckRefs(id, snap.Messages); err != nil {
			return last, latest, err
		}
		if m, err = record.Next(id, last.Meta, last.Rev, gen, now()); err != nil {
			return last, latest, err
		}
	}
	if err := blobs.Sync(); err != nil {
		return last, latest, layout.OpErr("create", id, err)
	}
	err := bw.Flush()
	if err == nil {
		err = b.Log.Datasync()
	}
	if err != nil {
		return last, latest, layout.OpErr("create", id, fmt.Errorf("write log: %w", err))
	}
	return last, latest, nil
}

// vfsWriter lets a bufio.Writer write to a vfs.File, each write whole.
type vfsWriter struct{ f vfs.File }

func (w vfsWriter) Write(p []byte) (int, error) {
	if err := layout.WriteAll(w.f, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
