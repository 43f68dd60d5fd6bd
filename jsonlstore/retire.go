package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The retired area's errors (package retire's, the same values). They are
// a block of their own, beside the code that returns them, so that the
// retired area is one file of the facade.
var (
	// ErrRetireHeld reports a session a live holder has: never retired.
	ErrRetireHeld = retire.ErrHeld
	// ErrRetireBusy reports another retire or restore running on the store.
	ErrRetireBusy = retire.ErrBusy
	// ErrNotRetired reports a session without a pack in the retired area.
	ErrNotRetired = retire.ErrNotRetired
	// ErrRetireConflict reports a session live and retired with different
	// histories: neither copy is touched.
	ErrRetireConflict = retire.ErrConflict
	// ErrRetiredCorrupt reports a damaged pack or journal line.
	ErrRetiredCorrupt = retire.ErrCorrupt
	// ErrRetirePolicy reports a policy file that was refused.
	ErrRetirePolicy = retire.ErrPolicy
	// ErrRetireCriteria reports a retirement that names no sessions: no
	// IDs, age, labels or policy.
	ErrRetireCriteria = errors.New("jsonlstore: say which sessions to retire: IDs, an age, labels or the policy")
)

// errNotChosen leaves a session live when it no longer qualifies once its
// lease lock is held (it was appended to since the listing).
var errNotChosen = errors.New("no longer idle")

// leaseLockTries is how often retire tries a session's lease lock before
// calling it held: a reader's lease probe holds a shared lock for a
// moment (fslease.TryAcquire waits for it the same way).
const leaseLockTries = 10

// retired is the store's retired area (package retire), whose locks are
// the store's.
func (s *Store) retired() *retire.Area { return retire.New(s.root, s.tryLockFile) }

// tryLockFile takes the exclusive lock on the existing file at name
// (relative to the root) with the store's leaser, trying leaseLockTries
// times; held reports that someone else has it.
func (s *Store) tryLockFile(name string) (func(), bool, error) {
	for try := 0; ; try++ {
		unlock, err := s.leases.tryLock(s.root.Abs(name))
		switch {
		case err == nil:
			return unlock, false, nil
		case !errors.Is(err, errLocked):
			return nil, false, err
		case try+1 == leaseLockTries:
			return nil, true, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

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
	rep := maintenance.RetireReport{DryRun: opts.DryRun, Retired: []maintenance.RetiredSession{}}
	if err := s.ready(ctx); err != nil {
		return rep, err
	}
	if len(opts.IDs) == 0 && opts.OlderThan == 0 && len(opts.Labels) == 0 && !opts.Policy {
		return rep, ErrRetireCriteria
	}
	if opts.OlderThan < 0 {
		return rep, fmt.Errorf("%w: negative age %v", ErrRetireCriteria, opts.OlderThan)
	}
	var policy maintenance.RetirePolicy
	if opts.Policy {
		var err error
		if policy, err = retire.ReadPolicy(s.fs); err != nil {
			return rep, err
		}
	}
	restored, err := s.lastRestores()
	if err != nil {
		return rep, err
	}
	now := s.opts.Now()
	// choose says whether sum qualifies, and why.
	choose := func(sum *summary.Summary, named bool) (string, bool) {
		idle := now.Sub(sum.UpdatedAt)
		if r, ok := restored[sum.ID]; ok && now.Sub(r) < idle {
			idle = now.Sub(r)
		}
		if opts.Policy {
			if n := policy.Match(sum.Labels, idle); n > 0 && (named || len(opts.IDs) == 0) {
				return fmt.Sprintf("policy rule %d", n), true
			}
			return "", false
		}
		if !maintenance.HasLabels(sum.Labels, opts.Labels) || idle < opts.OlderThan {
			return "", false
		}
		switch {
		case opts.OlderThan > 0:
			return "older than " + opts.OlderThan.String(), true
		case named:
			return "named", true
		}
		return "labels", true
	}
	cands, unreadable, err := s.retireCandidates(ctx, opts)
	if err != nil {
		return rep, err
	}
	rep.Unreadable = unreadable
	named := map[session.SessionID]bool{}
	for _, id := range opts.IDs {
		named[id] = true
		if _, ok := cands[id]; !ok {
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: "not a live session"})
		}
	}
	area := s.retired()
	for _, sum := range sortedSummaries(cands) {
		id := sum.ID
		reason, ok := choose(&sum, named[id])
		if !ok {
			if named[id] {
				rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: "not idle long enough, or not matching"})
			}
			continue
		}
		if sum.Lease.State == summary.LeaseHeld {
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: "held by a live holder"})
			continue
		}
		if opts.DryRun {
			rep.Retired = append(rep.Retired, maintenance.RetiredSession{ID: id, Summary: sum, Bytes: sum.Sizes.Total(), Reason: reason})
			rep.Bytes += sum.Sizes.Total()
			continue
		}
		rs, err := area.Retire(ctx, id, func() (summary.Summary, string, error) {
			fresh, err := s.summaryOf(ctx, id) // under the lease lock: what will be retired
			if err != nil {
				return fresh, "", err
			}
			if _, ok := choose(&fresh, named[id]); !ok {
				return fresh, "", errNotChosen
			}
			return fresh, reason, nil
		})
		switch {
		case errors.Is(err, retire.ErrBusy) || ctx.Err() != nil:
			return rep, err
		case errors.Is(err, retire.ErrHeld):
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: "held by a live holder"})
			continue
		case err != nil:
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: err.Error()})
			continue
		}
		s.indexDeleted(id) // the live index must not hold it
		rep.Retired = append(rep.Retired, rs)
		rep.Bytes += rs.Bytes
		rep.PackBytes += rs.PackBytes
	}
	return rep, nil
}

// retireCandidates lists the live sessions a retirement may take (all
// pages; the labels filter applied when no policy is).
func (s *Store) retireCandidates(ctx context.Context, opts maintenance.RetireOptions) (map[session.SessionID]summary.Summary, []summary.Unreadable, error) {
	q := summary.Query{Limit: summary.MaxLimit}
	if !opts.Policy {
		q.Labels = opts.Labels
	}
	out := map[session.SessionID]summary.Summary{}
	var bad []summary.Unreadable
	for {
		page, err := s.List(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		for _, sum := range page.Items {
			out[sum.ID] = sum
		}
		bad = page.Unreadable
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if len(opts.IDs) > 0 {
		keep := map[session.SessionID]summary.Summary{}
		for _, id := range opts.IDs {
			if sum, ok := out[id]; ok {
				keep[id] = sum
			}
		}
		out = keep
	}
	return out, bad, nil
}

func sortedSummaries(m map[session.SessionID]summary.Summary) []summary.Summary {
	out := make([]summary.Summary, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

// ready is nil when the store is open and ctx is not done.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return sessionstore.ErrClosed
	}
	return ctx.Err()
}

// lastRestores reads the journal for each session's latest restore: a
// restored session counts as active from then on, so that a policy does
// not retire again at once what someone just brought back.
func (s *Store) lastRestores() (map[session.SessionID]time.Time, error) {
	out := map[session.SessionID]time.Time{}
	for ev, err := range retire.Events(s.fs) {
		if err != nil {
			if errors.Is(err, retire.ErrCorrupt) {
				continue // one damaged line costs its own record, not the others'
			}
			return nil, err
		}
		if ev.Op == retire.OpRestore && ev.At.After(out[ev.ID]) {
			out[ev.ID] = ev.At
		}
	}
	return out, nil
}

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
	rep := maintenance.RestoreReport{Restored: []maintenance.RetiredSession{}}
	if err := s.ready(ctx); err != nil {
		return rep, err
	}
	area := s.retired()
	for _, id := range ids {
		rs, err := area.Restore(ctx, id)
		if err != nil {
			return rep, err
		}
		rep.Restored = append(rep.Restored, rs)
	}
	return rep, nil
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
	area := s.retired()
	if len(ids) == 0 {
		var err error
		if ids, err = area.IDs(); err != nil {
			return nil, err
		}
	}
	var bad []summary.Unreadable
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return bad, err
		}
		if _, err := area.Verify(id); err != nil {
			bad = append(bad, summary.Unreadable{ID: id, Reason: err.Error()})
		}
	}
	return bad, nil
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
	res := sessionstore.SearchResult{Hits: []sessionstore.SearchHit{}}
	if err := s.ready(ctx); err != nil {
		return res, err
	}
	q, fq, err := adapter.ParseSearch(q)
	if err != nil {
		return res, err
	}
	filter := q.Filter()
	area := s.retired()
	ix := fulltext.NewIndex()
	for rs, err := range area.List(ctx) {
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Unreadable = append(res.Unreadable, summary.Unreadable{ID: rs.ID, Reason: err.Error()})
			continue
		}
		if rs.AlsoLive || !filter.Match(&rs.Summary) {
			continue
		}
		if err := s.indexRetired(ctx, area, rs.ID, ix); err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Unreadable = append(res.Unreadable, summary.Unreadable{ID: rs.ID, Reason: err.Error()})
		}
	}
	f := fulltext.Filter{NoTools: q.NoTools, Session: func(project string, labels map[string]string) bool {
		return filter.Match(&summary.Summary{Project: project, Labels: labels})
	}}
	for _, h := range ix.Search(fq, f, q.Limit) {
		res.Hits = append(res.Hits, adapter.SearchHit(h))
	}
	return res, nil
}

// indexRetired reads retired session id into a file system in memory and
// puts each of its revisions into ix, read by a store over that file
// system (so that a retired session is read by the code that reads live
// ones: archives, deltas, blobs).
func (s *Store) indexRetired(ctx context.Context, area *retire.Area, id session.SessionID, ix *fulltext.Index) error {
	mem := vfs.NewSim()
	if _, err := area.Unpack(id, mem, string(id)); err != nil {
		return err
	}
	opts := s.opts
	opts.Search = nil
	view := newStore(s.dir, nil, mem, viewLeaser{}, opts)
	defer func() { _ = view.Close() }()
	for rec, err := range view.History(ctx, id) {
		var gap *sessionstore.GapError
		if errors.As(err, &gap) {
			continue
		}
		if err != nil {
			return err
		}
		snap := &rec.Snapshot
		ix.Put(fulltext.Revision{ID: id, Revision: rec.Revision, Updated: rec.Time, Title: snap.Title,
			Project: snap.Workspace.Project, Labels: snap.Labels, Messages: snap.Messages})
	}
	return nil
}

// viewLeaser is the leaser of a read-only view of a retired session: it
// reads, and nobody may take a lease in it.
type viewLeaser struct{}

var errView = errors.New("jsonlstore: a retired session's view is read-only")

func (viewLeaser) acquire(context.Context, string, bool, fslease.Options) (leaseHandle, error) {
	return nil, errView
}

func (viewLeaser) inspect(context.Context, string) (fslease.Status, error) {
	return fslease.Status{State: fslease.Free}, nil
}

func (viewLeaser) tryLock(string) (func(), error) { return nil, errView }
