package retire

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Live is the live set of sessions as a retirement sees it: the store's
// listings and summaries, and its search index to tell.
type Live interface {
	// List returns a page of the live sessions' summaries.
	List(ctx context.Context, q summary.Query) (summary.Page, error)
	// Summary reads live session id's summary now.
	Summary(ctx context.Context, id session.SessionID) (summary.Summary, error)
	// Retired tells the live search index that session id is gone.
	Retired(id session.SessionID)
}

// errNotChosen leaves a session live when it no longer qualifies once its
// lease lock is held (it was appended to since the listing).
var errNotChosen = errors.New("no longer idle")

// RetireIdle retires the live sessions opts chooses (see
// jsonlstore.Store.Retire, whose rules these are): a session qualifies by
// its labels and by how long it has been idle at now (since its latest
// revision, or its latest restore when that is later), or by the policy
// file's rules; a held one is skipped, and each is asked again under its
// lease lock, so that what is retired is what qualified.
func (a *Area) RetireIdle(ctx context.Context, opts maintenance.RetireOptions, now time.Time, live Live) (maintenance.RetireReport, error) {
	rep := maintenance.RetireReport{DryRun: opts.DryRun, Retired: []maintenance.RetiredSession{}}
	if len(opts.IDs) == 0 && opts.OlderThan == 0 && len(opts.Labels) == 0 && !opts.Policy {
		return rep, ErrCriteria
	}
	if opts.OlderThan < 0 {
		return rep, fmt.Errorf("%w: negative age %v", ErrCriteria, opts.OlderThan)
	}
	var policy maintenance.RetirePolicy
	if opts.Policy {
		var err error
		if policy, err = ReadPolicy(a.root.FS); err != nil {
			return rep, err
		}
	}
	restored, err := a.lastRestores()
	if err != nil {
		return rep, err
	}
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
	cands, unreadable, err := candidates(ctx, live, opts)
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
	for _, id := range slices.Sorted(maps.Keys(cands)) {
		sum := cands[id]
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
		rs, err := a.Retire(ctx, id, func() (summary.Summary, string, error) {
			fresh, err := live.Summary(ctx, id) // under the lease lock: what will be retired
			if err != nil {
				return fresh, "", err
			}
			if _, ok := choose(&fresh, named[id]); !ok {
				return fresh, "", errNotChosen
			}
			return fresh, reason, nil
		})
		switch {
		case errors.Is(err, ErrBusy) || ctx.Err() != nil:
			return rep, err
		case errors.Is(err, ErrHeld):
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: "held by a live holder"})
			continue
		case err != nil:
			rep.Skipped = append(rep.Skipped, maintenance.RetireSkip{ID: id, Reason: err.Error()})
			continue
		}
		live.Retired(id) // the live index must not hold it
		rep.Retired = append(rep.Retired, rs)
		rep.Bytes += rs.Bytes
		rep.PackBytes += rs.PackBytes
	}
	return rep, nil
}

// candidates lists the live sessions a retirement may take (all pages;
// the labels filter applied when no policy is).
func candidates(ctx context.Context, live Live, opts maintenance.RetireOptions) (map[session.SessionID]summary.Summary, []summary.Unreadable, error) {
	q := summary.Query{Limit: summary.MaxLimit}
	if !opts.Policy {
		q.Labels = opts.Labels
	}
	out := map[session.SessionID]summary.Summary{}
	var bad []summary.Unreadable
	for {
		page, err := live.List(ctx, q)
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

// lastRestores reads the journal for each session's latest restore: a
// restored session counts as active from then on, so that a policy does
// not retire again at once what someone just brought back.
func (a *Area) lastRestores() (map[session.SessionID]time.Time, error) {
	out := map[session.SessionID]time.Time{}
	for ev, err := range Events(a.root.FS) {
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				continue // one damaged line costs its own record, not the others'
			}
			return nil, err
		}
		if ev.Op == OpRestore && ev.At.After(out[ev.ID]) {
			out[ev.ID] = ev.At
		}
	}
	return out, nil
}
