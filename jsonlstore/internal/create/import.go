package create

import (
	"context"
	"fmt"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
)

// Import creates session id in root from its record lines, copied
// verbatim with the blobs they reference (logfile.ImportInto checks
// them), as the facade's Import promises: built under its lease (take,
// opts) in a temporary directory, published whole, left with a free
// lease whose generation is above every one in the records, and a
// summary. It returns the number of records; on an error nothing is
// created, or the session exists whole.
func Import(ctx context.Context, root *layout.Root, id session.SessionID, take TakeLease, opts fslease.Options,
	lines iter.Seq2[[]byte, error], blobs sessionstore.BlobSource,
) (n int, err error) {
	b, err := Start(ctx, root, id, take, opts, root.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			b.Abort(ctx)
			n = 0
		}
	}()

	im, err := logfile.ImportInto(ctx, root, id, b.Tmp, b.Log, lines, blobs)
	if err != nil {
		return 0, err
	}
	last := im.Last

	// Retake the lease above the records' generations, so that the lease
	// record tells the truth about the session. (Acquire would give a
	// higher generation anyway: it reads the log's last one.) Releasing
	// rewrites lease.json, which makes the directory new again for the
	// sweep of leftovers in between.
	if last.Gen >= b.Lease.Generation() {
		err = b.Lease.Release(context.WithoutCancel(ctx))
		b.Lease = nil
		if err != nil {
			return 0, layout.OpErr("import", id, fmt.Errorf("lease: %w", err))
		}
		opts.MinGeneration = last.Gen
		if b.Lease, b.Marked, err = take(ctx, id, b.Tmp, opts); err != nil {
			return 0, layout.OpErr("import", id, fmt.Errorf("lease: %w", err))
		}
	}
	if err = b.Publish(); err != nil {
		return 0, err
	}
	// Published: from here on the session exists whole, whatever fails.
	im.WriteSummary(root, id, b.Log)
	err = b.Lease.Release(context.WithoutCancel(ctx))
	b.Lease = nil
	_ = b.Log.Close() // written and synced above; nothing is written after
	b.Log = nil
	if err != nil {
		return 0, layout.OpErr("import", id, fmt.Errorf("release: %w", err))
	}
	return im.N, nil
}
