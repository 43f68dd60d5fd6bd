package offline

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// A sync brings two stores to the union of their sessions, one session at
// a time, with a backup's machinery in the direction each session needs:
//
//   - on one side only: copied to the other (copyInto), unless it is a
//     fork an earlier sync made of a branch the other side holds under
//     the session it diverged from (labels SyncDivergedFrom and
//     SyncDivergedAt): that branch is already there;
//   - alike on both sides (first and last records equal): left alone;
//   - one side's log a prefix of the other's, by the records' checksums,
//     or older than the other's compaction: brought up to date (update:
//     appended, or copied whole);
//   - appended on both sides since their last common revision N: each
//     side keeps its own, and gets the other's branch as a new session, a
//     fork of the session (adapter.ForkSnapshot: its ID replaced, the
//     session as its parent) labelled with where it diverged, holding
//     every revision of the branch from 1. The fork's ID is the session's
//     followed by "-div-" and the checksum of the branch's last record,
//     so a sync run again finds it made and makes nothing.
//
// A session a live writer holds on either side is skipped and reported.
// Each step is a backup's, so a kill leaves both sides readable: a fork is
// created whole or not at all (the store's CreateHistory publishes a
// session built under a temporary name).

// historyCreator is the store as Sync makes a fork through it (the
// facade's CreateHistoryReleased).
type historyCreator interface {
	CreateHistoryReleased(ctx context.Context, snaps iter.Seq2[sessnap.Snapshot, error], opts sessionstore.AcquireOptions) (bool, error)
}

// Sync brings s (side "a") and b (side "b") to the union of their
// sessions, filling rep, and returns the sessions it wrote into each, for
// the caller to verify.
func (s *Store) Sync(ctx context.Context, b *Store, opts maintenance.SyncOptions, rep *maintenance.SyncReport) (toA, toB []session.SessionID, err error) {
	idsA, err := layout.SessionIDs(s.root.FS)
	if err != nil {
		return nil, nil, err
	}
	idsB, err := layout.SessionIDs(b.root.FS)
	if err != nil {
		return nil, nil, err
	}
	inA, inB := set(idsA), set(idsB)
	all := slices.Concat(idsA, idsB)
	slices.Sort(all)
	all = slices.Compact(all)
	sides := [2]*syncSide{{s, "a", inA, &rep.ToA, &toA}, {b, "b", inB, &rep.ToB, &toB}}
	for i, id := range all {
		if err := ctx.Err(); err != nil {
			return toA, toB, err
		}
		if err := syncOne(ctx, sides, id, rep); err != nil {
			return toA, toB, layout.OpErr("sync", id, err)
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(all))
		}
	}
	return toA, toB, nil
}

// syncSide is one store of a sync.
type syncSide struct {
	s       *Store
	name    string
	has     map[session.SessionID]bool
	wrote   *[]maintenance.SessionBackup
	written *[]session.SessionID
}

func set(ids []session.SessionID) map[session.SessionID]bool {
	m := make(map[session.SessionID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// syncSkip records in rep that session id was left alone, and why.
func syncSkip(rep *maintenance.SyncReport, id session.SessionID, why string) {
	if rep.Skipped == nil {
		rep.Skipped = map[string]string{}
	}
	rep.Skipped[string(id)] = why
}

// held reports whether a live writer holds session id in side's store.
func (side *syncSide) held(ctx context.Context, id session.SessionID) bool {
	st, err := side.s.host.InspectLease(ctx, side.s.root.Abs(layout.SessionDir(id)))
	return err == nil && st.State == fslease.Held
}

// written records that sb was written into side.
func (side *syncSide) record(sb maintenance.SessionBackup, rep *maintenance.SyncReport) {
	if sb.Action == "" {
		rep.Unchanged++
		return
	}
	*side.wrote = append(*side.wrote, sb)
	*side.written = append(*side.written, sb.ID)
	rep.BytesCopied += sb.BytesCopied
}

// open opens session id of side as a backup's source; ok is false, with
// the reason in rep, when it cannot be read.
func (side *syncSide) open(id session.SessionID, rep *maintenance.SyncReport) (*backupSource, bool, error) {
	src, err := side.s.openBackupSource(id)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		syncSkip(rep, id, "deleted while syncing, or not a session, in "+side.name)
		return nil, false, nil
	case err != nil && !logfile.EndsStoreWide(err):
		rep.Unreadable = append(rep.Unreadable, summary.UnreadableOf(id, err))
		return nil, false, nil
	}
	return src, err == nil, err
}

func syncOne(ctx context.Context, sides [2]*syncSide, id session.SessionID, rep *maintenance.SyncReport) error {
	for _, side := range sides {
		if side.has[id] && side.held(ctx, id) {
			syncSkip(rep, id, "held by a live writer in "+side.name)
			return nil
		}
	}
	a, b := sides[0], sides[1]
	if !a.has[id] || !b.has[id] {
		from, to := a, b
		if !a.has[id] {
			from, to = b, a
		}
		if isForkOf(ctx, from, to, id) {
			rep.Unchanged++
			return nil
		}
		src, ok, err := from.open(id, rep)
		if !ok {
			return err
		}
		defer src.close()
		sb, err := src.copyInto(ctx, to.s)
		if err != nil {
			return err
		}
		to.record(sb, rep)
		return nil
	}
	sa, ok, err := a.open(id, rep)
	if !ok {
		return err
	}
	defer sa.close()
	sb, ok, err := b.open(id, rep)
	if !ok {
		return err
	}
	defer sb.close()
	var dir int // 1: a to b, -1: b to a, 0: diverged
	switch {
	case sa.prefixOf(sb):
		dir = -1
	case sb.prefixOf(sa):
		dir = 1
	case sa.holds(sb.v, sb.last):
		dir = 1 // b's copy is older than a's compaction
	case sb.holds(sa.v, sa.last):
		dir = -1
	}
	if dir != 0 {
		to, src := b, sa
		if dir < 0 {
			to, src = a, sb
		}
		r, why, err := src.update(ctx, to.s)
		switch {
		case err != nil:
			return err
		case why != "":
			syncSkip(rep, id, "held by a live writer in "+to.name)
			return nil
		}
		to.record(r, rep)
		return nil
	}
	n, err := commonRev(sa, sb)
	if err != nil {
		return err
	}
	for _, fk := range []struct {
		src  *backupSource
		from *syncSide
		to   *syncSide
	}{{sb, b, a}, {sa, a, b}} {
		f, err := fk.src.fork(ctx, fk.from, fk.to, n)
		if err != nil {
			return err
		}
		if f.Fork != "" {
			rep.Forks = append(rep.Forks, f)
			*fk.to.written = append(*fk.to.written, f.Fork)
		}
	}
	return nil
}

// prefixOf reports whether src's committed log is, by the records'
// checksums, a prefix of other's (or the same).
func (src *backupSource) prefixOf(other *backupSource) bool {
	_, prefix, _, err := other.compareLogs(src.v, src.last)
	return err == nil && prefix
}

// commonRev is the last revision sessions a and b have in common: the
// highest revision whose record is the same line in both logs, found by
// walking both logs back from their ends. When one log's start is reached
// first, the revisions below it (archived by a compaction) count as
// common.
func commonRev(a, b *backupSource) (uint64, error) {
	ra, rb := a.last, b.last
	for ra != nil && rb != nil {
		var err error
		switch {
		case ra.Rev > rb.Rev:
			ra, err = a.v.Back.Before(ra)
		case rb.Rev > ra.Rev:
			rb, err = b.v.Back.Before(rb)
		default:
			same, serr := sameRecord(a.v.F, ra, b.v.F, rb)
			if serr != nil {
				return 0, serr
			}
			if same {
				return ra.Rev, nil
			}
			if ra, err = a.v.Back.Before(ra); err == nil {
				rb, err = b.v.Back.Before(rb)
			}
		}
		if err != nil {
			return 0, err
		}
	}
	var first uint64
	for _, v := range []*logfile.View{a.v, b.v} {
		if f, ok := logfile.FirstRev(v); ok {
			first = max(first, f)
		}
	}
	return max(first, 1) - 1, nil
}

// forkID is the ID of the fork of session id holding the branch whose
// last record's checksum is crc.
func forkID(id session.SessionID, crc [8]byte) session.SessionID {
	base := string(id)
	const tail = len(forkInfix) + 8
	if len(base)+tail > sessionstore.MaxIDLength {
		base = base[:sessionstore.MaxIDLength-tail]
	}
	return session.SessionID(base + forkInfix + string(crc[:]))
}

// forkInfix is between a fork's session ID and its checksum (forkID).
const forkInfix = "-div-"

// fork makes, in side to, the fork of src's branch (session src.id of side
// from) diverged at revision n, unless to has it already.
func (src *backupSource) fork(ctx context.Context, from, to *syncSide, n uint64) (maintenance.SyncFork, error) {
	crc, err := lineCRC(src.v.F, src.last)
	if err != nil {
		return maintenance.SyncFork{}, err
	}
	f := maintenance.SyncFork{ID: src.id, In: to.name, DivergedAt: n, Revisions: src.last.Rev}
	fid := forkID(src.id, crc)
	if _, err := to.s.root.FS.Lstat(layout.SessionDir(fid)); err == nil {
		return maintenance.SyncFork{}, nil // made by an earlier sync
	}
	hc, ok := to.s.host.(historyCreator)
	if !ok {
		return f, errors.New("the store cannot create a session with its history")
	}
	snaps := func(yield func(sessnap.Snapshot, error) bool) {
		for rec, err := range from.s.host.History(ctx, src.id) {
			if err != nil {
				yield(sessnap.Snapshot{}, err)
				return
			}
			if rec.Revision > src.last.Rev {
				return // appended since the sync looked
			}
			snap := adapter.ForkSnapshot(rec.Snapshot, fid)
			snap.Labels = forkLabels(snap.Labels, src.id, n)
			if !yield(snap, nil) {
				return
			}
		}
	}
	if _, err := hc.CreateHistoryReleased(ctx, snaps, sessionstore.AcquireOptions{Label: "sessions-sync"}); err != nil {
		if errors.Is(err, sessionstore.ErrExists) {
			return maintenance.SyncFork{}, nil
		}
		return f, err
	}
	f.Fork = fid
	return f, nil
}

// forkLabels returns labels with the fork's two labels added.
func forkLabels(labels map[string]string, id session.SessionID, n uint64) map[string]string {
	out := make(map[string]string, len(labels)+2)
	maps.Copy(out, labels)
	out[maintenance.SyncDivergedFrom] = string(id)
	out[maintenance.SyncDivergedAt] = strconv.FormatUint(n, 10)
	return out
}

// isForkOf reports whether session id, which side from holds and side to
// does not, is a fork an earlier sync made in from of a branch to holds
// under the session it diverged from.
func isForkOf(ctx context.Context, from, to *syncSide, id session.SessionID) bool {
	if !strings.Contains(string(id), forkInfix) {
		return false // not named as forkID names them: no need to load it
	}
	rec, err := from.s.host.Load(ctx, id)
	if err != nil {
		return false
	}
	parent := session.SessionID(rec.Snapshot.Labels[maintenance.SyncDivergedFrom])
	return parent != "" && rec.Snapshot.Relationship.ParentID == parent && to.has[parent]
}
