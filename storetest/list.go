package storetest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var allOrders = []summary.Order{
	summary.OrderUpdatedDesc, summary.OrderUpdatedAsc,
	summary.OrderCreatedDesc, summary.OrderCreatedAsc, summary.OrderIDAsc,
}

// checkListPagingUnderAppends pages through every order while goroutines
// keep appending to other sessions: each session not modified during the
// paging appears exactly once.
func checkListPagingUnderAppends(f *fixture) {
	t := f.t
	const stable, busy = 40, 6
	for i := range stable {
		f.createSnap(configured(t, fmt.Sprintf("stable-%02d", i), func(c *session.Config) {
			c.CreatedAt = c.CreatedAt.Add(time.Duration(i%7) * time.Second) // ties on purpose
		}))
	}
	base := make([]sessionstore.Writer, busy)
	for i := range busy {
		base[i] = f.create(fmt.Sprintf("busy-%d", i))
	}
	snap := stepSnap(t, "busy-0", 0)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	var appended sync.WaitGroup // one append from each writer before paging starts
	appended.Add(busy)
	for i, w := range base {
		s := snap
		s.ID = w.ID()
		wg.Go(func() {
			for n := 0; n < 300; n++ {
				select {
				case <-stop:
					return
				default:
				}
				s.Title = fmt.Sprintf("busy %d append %d", i, n)
				if _, err := w.Append(f.ctx, w.Revision(), s); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					if n == 0 {
						appended.Done()
					}
					return
				}
				if n == 0 {
					appended.Done()
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	appended.Wait()

	for pass := range 2 {
		for _, order := range allOrders {
			got := f.listAll(summary.Query{Order: order, Limit: 7})
			count := map[string]int{}
			for _, id := range ids(got) {
				count[id]++
			}
			for i := range stable {
				id := fmt.Sprintf("stable-%02d", i)
				require.Equal(t, 1, count[id], "pass %d order %s: session %s", pass, order, id)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, errs)
}

func checkListState(f *fixture) {
	t := f.t
	writers := map[session.State]sessionstore.Writer{}
	for _, st := range session.States {
		writers[st] = f.createSnap(snapIn(t, "s-"+string(st), st))
	}
	for _, st := range session.States {
		got := f.listAll(summary.Query{States: []session.State{st}})
		require.Equal(t, []string{"s-" + string(st)}, ids(got), "state %s", st)
	}
	got := f.listAll(summary.Query{States: []session.State{session.StateFailed, session.StateIdle}, Order: summary.OrderIDAsc})
	require.Equal(t, []string{"s-failed", "s-idle"}, ids(got))
	require.Len(t, f.listAll(summary.Query{}), len(session.States))

	// A session's state in the listing follows its latest revision.
	f.append(writers[session.StateIdle], 1, snapIn(t, "s-idle", session.StateRunning))
	got = f.listAll(summary.Query{States: []session.State{session.StateRunning}, Order: summary.OrderIDAsc})
	require.Equal(t, []string{"s-idle", "s-running"}, ids(got))
}

func checkListKind(f *fixture) {
	t := f.t
	kinds := map[string]session.SessionKind{
		"k-primary": session.KindPrimary, "k-sub": session.KindSubagent,
		"k-sched": session.KindScheduled, "k-debug": session.KindDebug, "k-none": "",
	}
	for id, k := range kinds {
		f.createSnap(configured(t, id, func(c *session.Config) { c.Kind = k }))
	}
	tests := []struct {
		kinds []session.SessionKind
		want  []string
	}{
		{[]session.SessionKind{session.KindSubagent}, []string{"k-sub"}},
		{[]session.SessionKind{session.KindScheduled, session.KindDebug}, []string{"k-debug", "k-sched"}},
		{[]session.SessionKind{session.KindUnknown}, []string{"k-none"}},
		{nil, []string{"k-debug", "k-none", "k-primary", "k-sched", "k-sub"}},
	}
	for _, tt := range tests {
		got := f.listAll(summary.Query{Kinds: tt.kinds, Order: summary.OrderIDAsc})
		require.Equal(t, tt.want, ids(got), "kinds %v", tt.kinds)
	}
}

func checkListParent(f *fixture) {
	t := f.t
	f.create("p")
	f.create("unrelated")
	for _, kid := range []session.SessionID{"p-kid1", "p-kid2"} {
		f.fork("p", 0, kid)
	}
	f.fork("p-kid1", 0, "p-grandkid")

	require.Equal(t, []string{"p-kid1", "p-kid2"}, ids(f.listAll(summary.Query{ParentID: "p", Order: summary.OrderIDAsc})))
	require.Equal(t, []string{"p-grandkid"}, ids(f.listAll(summary.Query{ParentID: "p-kid1"})))
	require.Empty(t, f.listAll(summary.Query{ParentID: "unrelated"}))
	for _, s := range f.listAll(summary.Query{ParentID: "p"}) {
		require.Equal(t, session.SessionID("p"), s.ParentID)
	}
}

// checkListUpdatedSince checks the filter against the listing's own
// UpdatedAt values, so it needs no control of the store's clock.
func checkListUpdatedSince(f *fixture) {
	t := f.t
	for i := range 6 {
		w := f.create(fmt.Sprintf("u-%d", i))
		f.appendSteps(w, i%3)
	}
	all := f.listAll(summary.Query{Order: summary.OrderUpdatedAsc})
	require.Len(t, all, 6)
	for _, cut := range all {
		var want []string
		for _, s := range all {
			if !s.UpdatedAt.Before(cut.UpdatedAt) {
				want = append(want, string(s.ID))
			}
		}
		got := f.listAll(summary.Query{UpdatedSince: cut.UpdatedAt, Order: summary.OrderUpdatedAsc})
		require.Equal(t, want, ids(got), "updated since %s", cut.UpdatedAt)
	}
	latest := all[len(all)-1].UpdatedAt
	require.Empty(t, f.listAll(summary.Query{UpdatedSince: latest.Add(time.Hour)}))
	require.Len(t, f.listAll(summary.Query{UpdatedSince: all[0].UpdatedAt.Add(-time.Hour)}), 6)
}

// checkListLabelsProject filters by labels (ANDed equality) and by
// project (exact, or with its subdirectories), follows the latest
// revision's labels, and pages such a listing with cursors.
func checkListLabelsProject(f *fixture) {
	t := f.t
	type spec struct {
		labels  map[string]string
		project string
	}
	specs := map[string]spec{
		"l-app-a":    {map[string]string{"team": "a", "env": "dev"}, "/src/app"},
		"l-app-b":    {map[string]string{"team": "b", "env": "dev"}, "/src/app/"},
		"l-lib":      {map[string]string{"team": "a", "pinned": ""}, "/src/lib"},
		"l-sub":      {map[string]string{"team": "a"}, "/src/app/tools"},
		"l-sibling":  {nil, "/src/apps"},
		"l-nothing":  {nil, ""},
		"l-relabels": {map[string]string{"team": "a", "env": "dev"}, "/src/app"},
	}
	writers := map[string]sessionstore.Writer{}
	for id, sp := range specs {
		writers[id] = f.createSnap(configured(t, id, func(c *session.Config) {
			c.Labels = sp.labels
			c.Workspace = session.Workspace{Project: sp.project, Dir: sp.project}
		}))
	}
	// The listing follows the latest revision: l-relabels leaves team a.
	w := writers["l-relabels"]
	snap := f.load("l-relabels").Snapshot
	snap.Labels = map[string]string{"team": "c", "env": "dev"}
	f.append(w, w.Revision(), snap)

	tests := []struct {
		name string
		q    summary.Query
		want []string
	}{
		{"one label", summary.Query{Labels: map[string]string{"team": "a"}}, []string{"l-app-a", "l-lib", "l-sub"}},
		{"labels are ANDed", summary.Query{Labels: map[string]string{"team": "a", "env": "dev"}}, []string{"l-app-a"}},
		{"an empty value matches a tag", summary.Query{Labels: map[string]string{"pinned": ""}}, []string{"l-lib"}},
		{"an empty value is not a wildcard", summary.Query{Labels: map[string]string{"env": ""}}, nil},
		{"relabelled", summary.Query{Labels: map[string]string{"team": "c"}}, []string{"l-relabels"}},
		{"project exact", summary.Query{Project: "/src/app"}, []string{"l-app-a", "l-app-b", "l-relabels"}},
		{"project trailing slash", summary.Query{Project: "/src/app/"}, []string{"l-app-a", "l-app-b", "l-relabels"}},
		{"project tree", summary.Query{Project: "/src/app", ProjectTree: true}, []string{"l-app-a", "l-app-b", "l-relabels", "l-sub"}},
		{"project tree of the root", summary.Query{Project: "/", ProjectTree: true},
			[]string{"l-app-a", "l-app-b", "l-lib", "l-relabels", "l-sibling", "l-sub"}},
		{"project and label", summary.Query{Project: "/src/app", ProjectTree: true, Labels: map[string]string{"team": "a"}}, []string{"l-app-a", "l-sub"}},
		{"unknown project", summary.Query{Project: "/nowhere"}, nil},
	}
	for _, tt := range tests {
		for _, limit := range []int{0, 1} { // 1: every item on its own page, through cursors
			q := tt.q
			q.Order, q.Limit = summary.OrderIDAsc, limit
			got := ids(f.listAll(q))
			if tt.want == nil {
				require.Empty(t, got, "%s, limit %d", tt.name, limit)
				continue
			}
			require.Equal(t, tt.want, got, "%s, limit %d", tt.name, limit)
		}
	}
	for _, s := range f.listAll(summary.Query{Labels: map[string]string{"team": "a", "env": "dev"}}) {
		require.Equal(t, map[string]string{"team": "a", "env": "dev"}, s.Labels)
		require.Equal(t, "/src/app", s.Project)
		require.Equal(t, "/src/app", s.Dir)
	}

	q := summary.Query{Labels: map[string]string{"team": "a"}, Order: summary.OrderIDAsc, Limit: 1}
	p, err := f.s.List(f.ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	other := q
	other.Cursor, other.Labels = p.Next, map[string]string{"team": "b"}
	_, err = f.s.List(f.ctx, other)
	require.ErrorIs(t, err, summary.ErrBadCursor, "a cursor is bound to its labels")
	other.Labels, other.Project = q.Labels, "/src/app"
	_, err = f.s.List(f.ctx, other)
	require.ErrorIs(t, err, summary.ErrBadCursor, "a cursor is bound to its project")
}

func checkListOrders(f *fixture) {
	t := f.t
	// Creation times in a different order from IDs and from updates.
	created := []int{5, 1, 4, 1, 3, 0, 2, 4}
	var writers []sessionstore.Writer
	var snaps []sessnap.Snapshot
	for i, c := range created {
		snap := configured(t, fmt.Sprintf("o-%d", i), func(cfg *session.Config) {
			cfg.CreatedAt = cfg.CreatedAt.Add(time.Duration(c) * time.Minute)
		})
		writers = append(writers, f.createSnap(snap))
		snaps = append(snaps, snap)
	}
	for _, i := range []int{3, 0, 6} {
		next := snaps[i]
		next.Title, next.TitleProvenance = "updated", session.TitleExplicit
		f.append(writers[i], 1, next)
	}
	for _, order := range allOrders {
		got := f.listAll(summary.Query{Order: order, Limit: summary.MaxLimit})
		require.Len(t, got, len(created), "order %s", order)
		keys := make([]summary.Key, len(got))
		for i := range got {
			keys[i] = summary.KeyOf(order, &got[i])
		}
		require.True(t, slices.IsSortedFunc(keys, func(a, b summary.Key) int { return summary.Compare(order, a, b) }),
			"order %s: %v", order, ids(got))
		paged := f.listAll(summary.Query{Order: order, Limit: 3})
		require.Equal(t, ids(got), ids(paged), "order %s: paging must give the same sequence", order)
	}
	byID := f.listAll(summary.Query{Order: summary.OrderIDAsc})
	require.Equal(t, []string{"o-0", "o-1", "o-2", "o-3", "o-4", "o-5", "o-6", "o-7"}, ids(byID))
	byCreated := f.listAll(summary.Query{Order: summary.OrderCreatedAsc})
	require.Equal(t, []string{"o-5", "o-1", "o-3", "o-6", "o-4", "o-2", "o-7", "o-0"}, ids(byCreated))
}

func checkListZeroQuery(f *fixture) {
	t := f.t
	for i := range 3 {
		f.create(fmt.Sprintf("z-%d", i))
	}
	p, err := f.s.List(f.ctx, summary.Query{})
	require.NoError(t, err)
	require.Len(t, p.Items, 3)
	require.Empty(t, p.Next)
	keys := make([]summary.Key, len(p.Items))
	for i := range p.Items {
		keys[i] = summary.KeyOf(summary.OrderUpdatedDesc, &p.Items[i])
	}
	require.True(t, slices.IsSortedFunc(keys, func(a, b summary.Key) int { return summary.Compare(summary.OrderUpdatedDesc, a, b) }),
		"the zero Query lists the most recently updated first")

	empty := f.h.New(t)
	defer func() { require.NoError(t, empty.Close()) }()
	p, err = empty.List(f.ctx, summary.Query{})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.Empty(t, p.Next)
}

func checkListBadCursor(f *fixture) {
	t := f.t
	for i := range 4 {
		f.create(fmt.Sprintf("c-%d", i))
	}
	q := summary.Query{Order: summary.OrderCreatedAsc, Limit: 1, States: []session.State{session.StateIdle}}
	p, err := f.s.List(f.ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)

	tests := []struct {
		name string
		q    summary.Query
	}{
		{"garbage", summary.Query{Cursor: "not a cursor!"}},
		{"other order", summary.Query{Cursor: p.Next, Order: summary.OrderIDAsc, Limit: 1, States: q.States}},
		{"other filter", summary.Query{Cursor: p.Next, Order: q.Order, Limit: 1}},
		{"added kind filter", summary.Query{Cursor: p.Next, Order: q.Order, Limit: 1, States: q.States, Kinds: []session.SessionKind{session.KindPrimary}}},
	}
	for _, tt := range tests {
		_, err := f.s.List(f.ctx, tt.q)
		require.ErrorIs(t, err, summary.ErrBadCursor, tt.name)
	}
	q.Cursor = p.Next
	q.Limit = 10 // the limit may change between pages
	p2, err := f.s.List(f.ctx, q)
	require.NoError(t, err)
	require.Len(t, p2.Items, 3)
}

func checkListInvalidQuery(f *fixture) {
	t := f.t
	f.create("q")
	for _, q := range []summary.Query{
		{Order: "sideways"},
		{Limit: -1},
		{States: []session.State{"sleeping"}},
		{Kinds: []session.SessionKind{"robot"}},
		{Labels: map[string]string{"Not A Key": "x"}},
		{Labels: map[string]string{"k": "bad\nvalue"}},
		{ProjectTree: true},
	} {
		_, err := f.s.List(f.ctx, q)
		require.Error(t, err, "query %+v", q)
	}
}

func checkListSummary(f *fixture) {
	t := f.t
	snap := snapIn(t, "sum", session.StateAwaiting)
	w := f.createLabel(snap, "lister")
	rec := f.load("sum")

	get := func() summary.Summary {
		t.Helper()
		items := f.listAll(summary.Query{})
		require.Len(t, items, 1)
		return items[0]
	}
	s := get()
	want := summary.Project(&rec.Snapshot, rec.Revision, rec.Generation, rec.Time)
	require.Equal(t, session.SessionID("sum"), s.ID)
	require.Equal(t, snap.Title, s.Title)
	require.Equal(t, snap.TitleProvenance, s.TitleProvenance)
	require.Equal(t, session.StateAwaiting, s.State)
	require.Equal(t, session.KindPrimary, s.Kind)
	require.Equal(t, session.ModeDefault, s.Mode)
	require.Equal(t, want.ProviderID, s.ProviderID)
	require.Equal(t, want.ModelID, s.ModelID)
	require.True(t, snap.CreatedAt.Equal(s.CreatedAt), "created_at")
	require.True(t, rec.Time.Equal(s.UpdatedAt), "updated_at is the latest record's time")
	require.Equal(t, uint64(1), s.Revision)
	require.Equal(t, w.Generation(), s.Generation)
	require.Equal(t, len(snap.Messages), s.MessageCount)
	require.Equal(t, snap.Counters, s.Counters)
	require.Equal(t, *snap.Usage, s.Usage)
	require.Equal(t, summary.LeaseHeld, s.Lease.State, "lease status is computed when read")
	require.Positive(t, s.Sizes.LogBytes)
	size1 := s.Sizes.LogBytes

	f.append(w, 1, snapIn(t, "sum", session.StateFailed))
	require.NoError(t, w.Release(f.ctx))
	rec = f.load("sum")
	s = get()
	require.Equal(t, session.StateFailed, s.State)
	require.Equal(t, uint64(2), s.Revision)
	require.True(t, rec.Time.Equal(s.UpdatedAt))
	require.Equal(t, rec.Snapshot.LastError, s.LastError)
	require.Equal(t, summary.LeaseFree, s.Lease.State, "lease status is computed when read")
	require.Greater(t, s.Sizes.LogBytes, size1)
}

// checkIDs: IDs names every session in ID order, whatever order they were
// created in, a damaged one included (when the harness can damage one),
// and nothing on an empty or closed store.
func checkIDs(f *fixture) {
	t := f.t
	for _, id := range []string{"ids-c", "ids-a", "ids-b"} {
		require.NoError(t, f.create(id).Release(f.ctx))
	}
	want := []session.SessionID{"ids-a", "ids-b", "ids-c"}
	if f.h.Damage != nil {
		f.h.Damage(t, f.s, "ids-b")
	}
	got, err := f.s.IDs(f.ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)

	empty := f.h.New(t)
	got, err = empty.IDs(f.ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, empty.Close())
	_, err = empty.IDs(f.ctx)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}
