package jsonlstore

import (
	"context"
	"fmt"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var _ sessionstore.HistoryCreator = (*Store)(nil)

// CreateHistory creates a session whose revisions are the snapshots snaps
// yields, as Create creates one with a single revision (Create is
// CreateHistory of one snapshot): the session
// directory is built under a temporary name under its lease, every record
// is written to its log through one buffer (each record as an append
// would write it: deltas where they pay, large content into blobs/), the
// blobs and the log are synced once, after the last record, and the
// directory is then renamed into place. A session of a thousand revisions
// costs the syncs of a session of one, and a crash before the rename
// leaves only a temporary directory, which the next sweep removes.
//
// It returns the writer of the session at its last revision. Errors:
// Create's, ErrInvalidSnapshot for an empty sequence or a snapshot of
// another session, and the sequence's own; on any of them nothing is
// created.
func (s *Store) CreateHistory(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	w, err := s.createHistory(ctx, snaps, opts, false, s.opts.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// CreateHistoryReleased is CreateHistory followed at once by the
// writer's Release (an import: sessions import), for less. The session's
// lease is recorded released in its temporary directory, before it is
// published (fslease.Lease.MarkReleased), so that the publishing syncs
// make that record durable with the rest and the release rewrites and
// syncs nothing: its lock is held until the session is published and its
// summary written, then let go of. Every reader sees what it sees of
// CreateHistory and Release (the lease held, then free with the
// creator's released record, which the next holder's RecoveryReport
// reports); a crash after the publishing rename leaves the session as a
// crash after Release would.
//
// created reports whether the session was created: if it was, err is
// Release's; if not, err is one of CreateHistory's and nothing is created.
func (s *Store) CreateHistoryReleased(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (created bool, err error) {
	w, err := s.createHistory(ctx, snaps, opts, true, s.opts.MaxRecordBytes)
	if err != nil {
		return false, err
	}
	return true, w.Release(context.WithoutCancel(ctx))
}

// createHistory is CreateHistory; with release, the lease is recorded
// released before the session is published (CreateHistoryReleased). The
// session is written under record cap maxRecord, which its settings.json
// records (the store's own, or a fork's source's when that is larger).
func (s *Store) createHistory(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions, release bool, maxRecord int) (_ *writer, err error) {
	return s.createHistoryFrom(ctx, snaps, opts, release, maxRecord, "")
}

// createHistoryFrom is createHistory of a fork of session share (""
// none): the blobs and pages it needs are share's files, linked
// (blobfile.ShareFrom), and the first snapshot's parts may reference them.
func (s *Store) createHistoryFrom(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions, release bool, maxRecord int, share session.SessionID) (_ *writer, err error) {
	h := sessionstore.PullHistory(snaps)
	defer h.Stop()
	first, err := h.First()
	if err != nil {
		return nil, err
	}
	id := first.ID
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	app, blobs := s.newAppender("")
	if share == "" || blobs == nil {
		// A new session holds no blobs: a part of its first revision that
		// arrives as a reference names content it does not hold.
		if err := blob.Refuse(id, first.Messages); err != nil {
			return nil, err
		}
		share = ""
	}
	app.Max = maxRecord
	if opts.Redactor != nil {
		app.Redact = redact.NewStream(opts.Redactor)
	}
	b, err := s.startSession(ctx, id, opts, maxRecord)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if blobs != nil {
				blobs.Discard()
			}
			b.Abort(ctx)
		}
	}()
	// Every revision's large content goes into the new session's blobs/,
	// synced together before the log (deferredFiles).
	blobs.Moved(b.Tmp)
	if blobs != nil {
		blobs.Defer(true)
	}
	if share != "" {
		// A fork's parts reference its parent's content: the new session
		// holds it once it is linked, and the check that it does is an
		// append's.
		blobs.ShareFrom(share)
		if err := blobs.ShareRefs(first.Messages); err != nil {
			return nil, err
		}
		if err := blobs.CheckRefs(id, first.Messages); err != nil {
			return nil, err
		}
	}
	last, latest, err := b.WriteHistory(ctx, app, blobs, first, h.Next, s.opts.Now)
	if err != nil {
		return nil, err
	}
	if release {
		// Nothing more is written under the lease that a reader could not
		// do without (the summary and the search index are caches): the
		// record is released before publish syncs the directory, so that
		// the session is published released.
		if err = b.Lease.MarkReleased(ctx); err != nil {
			return nil, layout.OpErr("create", id, fmt.Errorf("lease: %w", err))
		}
	}
	if err = b.Publish(); err != nil {
		return nil, err
	}
	blobs.Moved(layout.SessionDir(id))
	if blobs != nil {
		blobs.Defer(false) // the writer's appends sync each blob before its record
	}
	w, err := s.newWriter(id, b.Lease, b.Log, &last, app, blobs, sessionstore.RecoveryReport{Generation: b.Lease.Generation()}, b.Marked)
	if err != nil {
		return nil, layout.OpErr("create", id, err)
	}
	if last.Rev == 1 {
		w.feed = s.searchFeed(id, true) // a new session of one revision: the index holds nothing of it
	}
	fi := w.logStatAt(&last)
	w.writeSummary(&last, &latest, fi)
	w.indexAppended(&last, &latest, fi) // a longer history is read from the log when the queue is written
	return w, nil
}
