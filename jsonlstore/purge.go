package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/purge"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/secretscan"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// Redaction of stored sessions (package internal/purge, whose doc gives
// its steps and what a crash after each leaves) runs under a lease that
// Redact takes for each session, and the catalog and search index are
// rewritten once after.

// ErrRetired reports a session that is in the retired area: its pack is
// not redacted; restore it first.
var ErrRetired = errors.New("session is retired")

// errRedacted poisons the writer that redacted its session: what it
// remembers of the log (its file, its chain, its last snapshot) is the
// old history's.
var errRedacted = fmt.Errorf("%w: the session was redacted; acquire it again", sessionstore.ErrWriterFailed)

// Redact rewrites the whole history of each session of ids with the
// secrets r finds (nil: the store's Redactor) replaced, and removes the
// store's other copies of them (FORMAT.md "Redaction placeholders";
// package purge). Each session is redacted under its lease: a held one
// is skipped (Skipped set) when wait is 0, else waited for up to wait. A
// retired session is refused (ErrRetired). The listing catalog and the
// search index are then rewritten as new files. Each report says what
// was rewritten and removed, and what could not be. A redaction that is
// interrupted leaves the old history or the new one; running it again
// finishes removing the old copies.
func (s *Store) Redact(ctx context.Context, ids []session.SessionID, r *redact.Redactor, wait time.Duration) ([]maintenance.RedactReport, error) {
	if r == nil {
		r = s.opts.Redactor
	}
	var search func(context.Context) error
	if s.search != nil {
		search = func(ctx context.Context) error { _, err := s.search.Reindex(ctx); return err }
	}
	return purge.All(ctx, ids, func(id session.SessionID) (maintenance.RedactReport, error) { return s.redactOne(ctx, id, r, wait) },
		func(ctx context.Context) error { _, err := s.cat.Reindex(ctx); return err }, search)
}

// ScanSecrets implements sessionstore.SecretScanner (package secretscan).
func (s *Store) ScanSecrets(ctx context.Context, r *redact.Redactor, ids ...session.SessionID) iter.Seq2[sessionstore.SecretFinding, error] {
	return secretscan.Scan(ctx, s.root, s.retired(), func() error { return s.ready(ctx) }, r, ids)
}

// redactOne redacts session id under its lease.
func (s *Store) redactOne(ctx context.Context, id session.SessionID, r *redact.Redactor, wait time.Duration) (maintenance.RedactReport, error) {
	rep := maintenance.RedactReport{ID: id}
	if err := s.check(ctx, id); err != nil {
		return rep, err
	}
	w, err := sessionstore.AcquireWithin(ctx, s, id, sessionstore.AcquireOptions{Label: "redact"}, wait)
	var held *sessionstore.LeaseHeldError
	if errors.As(err, &held) {
		rep.Skipped = held.Error()
		return rep, nil
	}
	if errors.Is(err, sessionstore.ErrNotFound) && s.isRetired(id) {
		return rep, fmt.Errorf("%w: %s: restore it (sessions restore %s), then redact it", ErrRetired, id, id)
	}
	if err != nil {
		return rep, err
	}
	defer func() { _ = w.Release(context.WithoutCancel(ctx)) }() // the redaction is durable either way; an unreleased lease goes stale
	rep, err = w.(*writer).redact(ctx, r, rep)
	rep.NotPurged = append(rep.NotPurged, purge.NotPurged...)
	if s.isRetired(id) {
		rep.NotPurged = append(rep.NotPurged, "a retired copy, "+retire.PackPath(id)+" (an interrupted retire or restore left it): `sessions restore` or `rm --retired` it")
	}
	return rep, err
}

// isRetired reports whether session id has a pack in the retired area.
func (s *Store) isRetired(id session.SessionID) bool {
	_, err := s.fs.Lstat(retire.PackPath(id))
	return err == nil
}

// redact redacts the writer's session and poisons the writer.
func (w *writer) redact(ctx context.Context, r *redact.Redactor, rep maintenance.RedactReport) (maintenance.RedactReport, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.mayRewriteLocked(); err != nil {
		return rep, err
	}
	w.ensureMarkLocked() // the catalog knows the log may change
	w.failed = errRedacted
	return purge.Run(ctx, w.s.root, w.id, purgeHolder{w}, r, rep)
}

// purgeHolder is a writer as redaction reaches it (purge.Holder), its
// mutex held by writer.redact.
type purgeHolder struct{ w *writer }

func (h purgeHolder) Log() (vfs.Identity, int64, uint64) { return h.w.logID, h.w.size, h.w.rev }

func (h purgeHolder) CollectBlobs(ctx context.Context) (maintenance.BlobCollection, error) {
	return h.w.s.blobs().Collect(ctx, h.w.id, h.w.ForgetBlob)
}
