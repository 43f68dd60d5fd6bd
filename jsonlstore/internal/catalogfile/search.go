package catalogfile

import (
	"context"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/searchhost"
	"github.com/sessionstore/sessionstore/session"
)

// The catalog's word on the sessions' logs, for the search index
// (searchhost.Host's Sessions and ChangedWithoutMark): where the catalog
// can be believed, an unmarked session's entry describes its log as it
// is, and stands in for a probe of it.

// SearchSessions lists the names under the root that may be sessions,
// with the state of each one's log where the catalog vouches for it
// (searchhost.LogState.Vouched). With probeAll, or where the catalog
// cannot be believed, it vouches for none and the names are the root's.
// The returned Keep keeps the catalog as a listing does.
func (c *Catalog) SearchSessions(probeAll bool) (searchhost.Sessions, error) {
	var needs Needs
	keep := func(needs Needs) func(context.Context, bool) {
		return func(ctx context.Context, rebuild bool) {
			if rebuild {
				needs.Up = UpkeepRebuild
			}
			c.Keep(ctx, needs)
		}
	}
	if !probeAll {
		if v, ok := c.Vouch(&needs); ok {
			ids, logs, ok := vouchedStates(v)
			v.LC.Release()
			if ok {
				return searchhost.Sessions{IDs: ids, Logs: logs, Keep: keep(needs)}, nil
			}
		}
	}
	names, err := vfs.ReadDirNames(c.root.FS, ".")
	if err != nil {
		return searchhost.Sessions{}, layout.OpErr("list root", "", err)
	}
	var ids []session.SessionID
	for _, n := range names {
		if sessionstore.ValidateID(session.SessionID(n)) == nil {
			ids = append(ids, session.SessionID(n))
		}
	}
	return searchhost.Sessions{IDs: ids, Logs: make([]searchhost.LogState, len(ids)), Keep: keep(needs)}, nil
}

// vouchedStates returns the sessions v knows to be under the root, with
// the states its entries vouch for; those it does not vouch for (v.Look)
// are left to probe. ok is false for an entry whose ID is not a
// session's (a damaged catalog: no path it names is read).
func vouchedStates(v Vouched) (ids []session.SessionID, logs []searchhost.LogState, ok bool) {
	f := v.LC.F
	ids = make([]session.SessionID, 0, f.Len()+len(v.Look))
	logs = make([]searchhost.LogState, 0, f.Len()+len(v.Look))
	for i := range f.Len() {
		if v.Gone[i] {
			continue
		}
		id := f.EntryID(i)
		if sessionstore.ValidateID(id) != nil {
			return nil, nil, false
		}
		ls := searchhost.LogState{}
		if _, look := v.Look[id]; !look {
			ls = searchhost.LogState{Proof: searchhost.Proof(f.Log(i)), Vouched: true}
		}
		ids, logs = append(ids, id), append(logs, ls)
	}
	for id, i := range v.Look {
		if i < 0 { // new: not in the catalog
			ids, logs = append(ids, id), append(logs, searchhost.LogState{})
		}
	}
	return ids, logs, true
}

// ChangedWithoutMark reports whether a session of ids (isSession: one
// still under the root) has no mark: its log changed behind the
// catalog (a program without it, a hand edit), and the catalog is not
// to be believed for it.
func (c *Catalog) ChangedWithoutMark(ids []session.SessionID, isSession func(session.SessionID) bool) bool {
	marks, err := c.ReadMarks()
	if err != nil {
		return false
	}
	for _, id := range ids {
		if len(marks.Gens[id]) == 0 && isSession(id) {
			c.root.Logger.Warn("jsonlstore: catalog entry changed without a mark (a program without the catalog, or a hand edit); searching by every log and rebuilding the catalog",
				"session", id)
			return true
		}
	}
	return false
}
