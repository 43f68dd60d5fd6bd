package jsonlstore

import (
	"context"
	"iter"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The retired area's errors (package maintenance's, the same values). They are
// a block of their own, beside the code that returns them, so that the
// retired area is one file of the facade.
var (
	// ErrRetireHeld reports a session a live holder has: never retired.
	ErrRetireHeld = maintenance.ErrRetireHeld
	// ErrRetireBusy reports another retire or restore running on the store.
	ErrRetireBusy = maintenance.ErrRetireBusy
	// ErrNotRetired reports a session without a pack in the retired area.
	ErrNotRetired = maintenance.ErrNotRetired
	// ErrRetireConflict reports a session live and retired with different
	// histories: neither copy is touched.
	ErrRetireConflict = maintenance.ErrRetireConflict
	// ErrRetiredCorrupt reports a damaged pack or journal line.
	ErrRetiredCorrupt = maintenance.ErrRetiredCorrupt
	// ErrRetirePolicy reports a policy file that was refused.
	ErrRetirePolicy = maintenance.ErrRetirePolicy
	// ErrRetireCriteria reports a retirement that names no sessions: no
	// IDs, age, labels or policy.
	ErrRetireCriteria = maintenance.ErrRetireCriteria
)

// retired is the store's retired area (package retire), whose locks are
// the store's.
func (s *Store) retired() *retire.Area { return retire.New(s.root, s.tryLockFile) }

// Retire moves the idle sessions opts chooses out of the live set into the
// retired area (ROOT/.retired/, FORMAT.md), each compressed into one pack
// that is synced and read back whole against the session's files before
// the live copy is removed. A session is idle when its latest revision
// and its latest restore are older than the age, and unheld: one whose
// lease a live holder has is never retired (reported in Skipped). A
// crash at any point leaves each session live or retired, restorable,
// never lost. Each retirement is recorded in the area's journal.
// Listings, the catalog and the search index no longer see a retired
// session; RetiredSessions lists them, SearchRetired searches them,
// Restore brings them back. Errors: ErrRetireCriteria, ErrRetirePolicy,
// ErrRetireBusy (another retire or restore runs); a session that could
// not be retired is in Skipped with the reason, and the others go on.
func (s *Store) Retire(ctx context.Context, opts maintenance.RetireOptions) (maintenance.RetireReport, error) {
	if err := s.ready(ctx); err != nil {
		return maintenance.RetireReport{DryRun: opts.DryRun, Retired: []maintenance.RetiredSession{}}, err
	}
	return s.retired().RetireIdle(ctx, opts, s.opts.Now(), retireLive{s})
}

// retireLive is the store's live set as a retirement sees it
// (retire.Live).
type retireLive struct{ s *Store }

func (l retireLive) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	return l.s.List(ctx, q)
}

func (l retireLive) Summary(ctx context.Context, id session.SessionID) (summary.Summary, error) {
	return l.s.summaryOf(ctx, id)
}

func (l retireLive) Retired(id session.SessionID) { l.s.indexDeleted(id) }

// ready is nil when the store is open and ctx is not done.
func (s *Store) ready(ctx context.Context) error { return adapter.Ready(ctx, s.closed.Load()) }

// Restore brings retired sessions back into the live set, each byte for
// byte as it was retired (log, archives, blobs, summary, labels, lease
// files): read from its pack, checked against the pack's checksums, into
// a temporary directory that is synced and then published with a rename
// that never replaces; the pack is removed after. Listings, the catalog
// and the search index see it again. A crash leaves it retired, or live
// (and, for a moment, both). Each restore is recorded in the journal.
// Errors: ErrNotRetired, ErrRetireConflict (a live session of that ID
// with another history), ErrRetireBusy, ErrRetiredCorrupt; the sessions
// before a failure stay restored.
func (s *Store) Restore(ctx context.Context, ids ...session.SessionID) (maintenance.RestoreReport, error) {
	if err := s.ready(ctx); err != nil {
		return maintenance.RestoreReport{Restored: []maintenance.RetiredSession{}}, err
	}
	return s.retired().RestoreAll(ctx, ids...)
}

// RetiredSessions yields the retired sessions in ID order, each with the
// summary it had when it was retired; a damaged pack yields an error
// naming it (ErrRetiredCorrupt) and the listing goes on.
func (s *Store) RetiredSessions(ctx context.Context) iter.Seq2[maintenance.RetiredSession, error] {
	if err := s.ready(ctx); err != nil {
		return func(yield func(maintenance.RetiredSession, error) bool) { yield(maintenance.RetiredSession{}, err) }
	}
	return s.retired().List(ctx)
}

// VerifyRetired reads the packs of the given retired sessions (all when
// none are given) whole, and returns those that are damaged or missing.
func (s *Store) VerifyRetired(ctx context.Context, ids ...session.SessionID) ([]summary.Unreadable, error) {
	return s.retired().VerifyAll(ctx, ids...)
}

// RemoveRetired deletes retired session id's pack, and records it in the
// journal: the only way a retired session is deleted. ErrNotRetired when
// it has none.
func (s *Store) RemoveRetired(ctx context.Context, id session.SessionID) error {
	if err := sessionstore.ValidateID(id); err != nil {
		return err
	}
	return s.retired().Remove(ctx, id)
}

// SearchRetired searches the retired sessions as Search searches the live
// ones (the same query language and hits), by reading each pack whose
// summary matches the query's filter into memory: the live index never
// holds them, and a retired session costs nothing until it is searched.
// Its time grows with the retired area's size.
func (s *Store) SearchRetired(ctx context.Context, q sessionstore.SearchQuery) (sessionstore.SearchResult, error) {
	if err := s.ready(ctx); err != nil {
		return sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}}, err
	}
	return s.retired().Search(ctx, q, s.retiredHistory)
}

// retiredHistory reads the history of a retired session unpacked into
// mem, by a store over that file system, so that a retired session is
// read by the code that reads live ones (archives, deltas, blobs).
func (s *Store) retiredHistory(ctx context.Context, mem vfs.FS, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	return func(yield func(sessionstore.Record, error) bool) {
		opts := s.opts
		opts.Search = nil
		view := newStore(s.dir, nil, mem, lease.View{}, opts)
		defer func() { _ = view.Close() }()
		for rec, err := range view.History(ctx, id) {
			if !yield(rec, err) {
				return
			}
		}
	}
}
