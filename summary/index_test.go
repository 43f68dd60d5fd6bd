package summary_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sum builds a summary; opts adjust it.
func sum(id string, rev uint64, opts ...func(*summary.Summary)) summary.Summary {
	s := summary.Summary{
		ID:        session.SessionID(id),
		State:     session.StateIdle,
		Kind:      session.KindPrimary,
		Mode:      session.ModeDefault,
		CreatedAt: t0,
		UpdatedAt: t0.Add(time.Duration(rev) * time.Second),
		Revision:  rev,
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func withState(st session.State) func(*summary.Summary) {
	return func(s *summary.Summary) { s.State = st }
}
func withKind(k session.SessionKind) func(*summary.Summary) {
	return func(s *summary.Summary) { s.Kind = k }
}
func withParent(p string) func(*summary.Summary) {
	return func(s *summary.Summary) { s.ParentID = session.SessionID(p) }
}
func withCreated(d time.Duration) func(*summary.Summary) {
	return func(s *summary.Summary) { s.CreatedAt = t0.Add(d) }
}
func withUpdated(d time.Duration) func(*summary.Summary) {
	return func(s *summary.Summary) { s.UpdatedAt = t0.Add(d) }
}

func ids(items []summary.Summary) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = string(s.ID)
	}
	return out
}

// queryAll pages through q with the given page size and returns every item.
func queryAll(t *testing.T, ix *summary.Index, q summary.Query) []summary.Summary {
	t.Helper()
	var all []summary.Summary
	for range 10_000 {
		p, err := ix.Query(q)
		require.NoError(t, err)
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		require.NotEmpty(t, p.Items, "a page with a Next cursor must not be empty")
		q.Cursor = p.Next
	}
	t.Fatal("paging did not end")
	return nil
}

func TestIndexPutGetDelete(t *testing.T) {
	ix := summary.NewIndex()
	_, ok := ix.Get("a")
	require.False(t, ok)
	require.Equal(t, 0, ix.Len())

	ix.Put(sum("a", 1))
	ix.Put(sum("b", 1))
	require.Equal(t, 2, ix.Len())
	got, ok := ix.Get("a")
	require.True(t, ok)
	require.Equal(t, uint64(1), got.Revision)

	ix.Put(sum("a", 3))
	got, _ = ix.Get("a")
	require.Equal(t, uint64(3), got.Revision)

	require.True(t, ix.Delete("a"))
	require.False(t, ix.Delete("a"))
	_, ok = ix.Get("a")
	require.False(t, ok)
	require.Equal(t, 1, ix.Len())

	// A deleted ID may come back from revision 1.
	ix.Put(sum("a", 1))
	got, ok = ix.Get("a")
	require.True(t, ok)
	require.Equal(t, uint64(1), got.Revision)
}

func TestIndexPutRevisions(t *testing.T) {
	tests := []struct {
		name    string
		puts    []summary.Summary
		wantRev uint64
		wantT   string
	}{
		{"newer replaces", []summary.Summary{sum("a", 1), sum("a", 2)}, 2, ""},
		{"stale ignored", []summary.Summary{sum("a", 5), sum("a", 4)}, 5, ""},
		{"equal replaces", []summary.Summary{sum("a", 2), sum("a", 2, func(s *summary.Summary) { s.Title = "refreshed" })}, 2, "refreshed"},
		{"stale after newer ignored", []summary.Summary{sum("a", 1), sum("a", 3), sum("a", 2, func(s *summary.Summary) { s.Title = "late" })}, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := summary.NewIndex()
			for _, s := range tt.puts {
				ix.Put(s)
			}
			got, ok := ix.Get("a")
			require.True(t, ok)
			require.Equal(t, tt.wantRev, got.Revision)
			require.Equal(t, tt.wantT, got.Title)
		})
	}
}

func TestIndexReturnsCopies(t *testing.T) {
	ix := summary.NewIndex()
	s := sum("a", 1)
	s.Lease = summary.LeaseStatus{State: summary.LeaseHeld, Holder: &summary.Holder{Label: "orig"}}
	ix.Put(s)
	s.Lease.Holder.Label = "changed by caller after Put"

	got, _ := ix.Get("a")
	require.Equal(t, "orig", got.Lease.Holder.Label)
	got.Lease.Holder.Label = "changed by caller after Get"

	p, err := ix.Query(summary.Query{})
	require.NoError(t, err)
	require.Equal(t, "orig", p.Items[0].Lease.Holder.Label)
}

func filterFixture() *summary.Index {
	ix := summary.NewIndex()
	ix.Put(sum("idle-primary", 1))
	ix.Put(sum("running-sub", 2, withState(session.StateRunning), withKind(session.KindSubagent), withParent("idle-primary")))
	ix.Put(sum("done-sub", 3, withState(session.StateCompleted), withKind(session.KindSubagent), withParent("idle-primary")))
	ix.Put(sum("failed-sched", 4, withState(session.StateFailed), withKind(session.KindScheduled)))
	ix.Put(sum("awaiting-debug", 5, withState(session.StateAwaiting), withKind(session.KindDebug), withParent("failed-sched")))
	return ix
}

func TestIndexQueryFilters(t *testing.T) {
	tests := []struct {
		name string
		q    summary.Query
		want []string // in OrderIDAsc
	}{
		{"all", summary.Query{}, []string{"awaiting-debug", "done-sub", "failed-sched", "idle-primary", "running-sub"}},
		{"one state", summary.Query{States: []session.State{session.StateRunning}}, []string{"running-sub"}},
		{"two states", summary.Query{States: []session.State{session.StateIdle, session.StateFailed}}, []string{"failed-sched", "idle-primary"}},
		{"state without match", summary.Query{States: []session.State{session.StateCancelled}}, nil},
		{"kind", summary.Query{Kinds: []session.SessionKind{session.KindSubagent}}, []string{"done-sub", "running-sub"}},
		{"kinds", summary.Query{Kinds: []session.SessionKind{session.KindDebug, session.KindScheduled}}, []string{"awaiting-debug", "failed-sched"}},
		{"parent", summary.Query{ParentID: "idle-primary"}, []string{"done-sub", "running-sub"}},
		{"unknown parent", summary.Query{ParentID: "nobody"}, nil},
		{"updated since inclusive", summary.Query{UpdatedSince: t0.Add(4 * time.Second)}, []string{"awaiting-debug", "failed-sched"}},
		{"updated since future", summary.Query{UpdatedSince: t0.Add(time.Hour)}, nil},
		{"state and kind", summary.Query{States: []session.State{session.StateCompleted}, Kinds: []session.SessionKind{session.KindSubagent}}, []string{"done-sub"}},
		{"parent and state", summary.Query{ParentID: "idle-primary", States: []session.State{session.StateRunning}}, []string{"running-sub"}},
	}
	ix := filterFixture()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.Order = summary.OrderIDAsc
			p, err := ix.Query(q)
			require.NoError(t, err)
			require.Empty(t, p.Next)
			if tt.want == nil {
				require.Empty(t, p.Items)
				return
			}
			require.Equal(t, tt.want, ids(p.Items))
		})
	}
}

func TestIndexQueryOrders(t *testing.T) {
	ix := summary.NewIndex()
	// Times chosen so that the orders differ, with ties broken by ID.
	ix.Put(sum("a", 1, withCreated(3*time.Second), withUpdated(10*time.Second)))
	ix.Put(sum("b", 1, withCreated(1*time.Second), withUpdated(30*time.Second)))
	ix.Put(sum("c", 1, withCreated(2*time.Second), withUpdated(20*time.Second)))
	ix.Put(sum("d", 1, withCreated(2*time.Second), withUpdated(20*time.Second)))

	tests := []struct {
		order summary.Order
		want  []string
	}{
		{"", []string{"b", "d", "c", "a"}},
		{summary.OrderUpdatedDesc, []string{"b", "d", "c", "a"}},
		{summary.OrderUpdatedAsc, []string{"a", "c", "d", "b"}},
		{summary.OrderCreatedDesc, []string{"a", "d", "c", "b"}},
		{summary.OrderCreatedAsc, []string{"b", "c", "d", "a"}},
		{summary.OrderIDAsc, []string{"a", "b", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("order=%s", tt.order), func(t *testing.T) {
			p, err := ix.Query(summary.Query{Order: tt.order})
			require.NoError(t, err)
			require.Equal(t, tt.want, ids(p.Items))
			for _, limit := range []int{1, 2, 3} {
				got := queryAll(t, ix, summary.Query{Order: tt.order, Limit: limit})
				require.Equal(t, tt.want, ids(got), "limit %d", limit)
			}
		})
	}
}

func TestIndexQueryLimits(t *testing.T) {
	ix := summary.NewIndex()
	for i := range summary.MaxLimit + 10 {
		ix.Put(sum(fmt.Sprintf("s%05d", i), 1))
	}
	tests := []struct {
		name     string
		limit    int
		wantLen  int
		wantNext bool
	}{
		{"default", 0, summary.DefaultLimit, true},
		{"small", 7, 7, true},
		{"clamped", summary.MaxLimit * 5, summary.MaxLimit, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ix.Query(summary.Query{Limit: tt.limit, Order: summary.OrderIDAsc})
			require.NoError(t, err)
			require.Len(t, p.Items, tt.wantLen)
			require.Equal(t, tt.wantNext, p.Next != "")
		})
	}

	// An exact fit has no Next.
	small := summary.NewIndex()
	small.Put(sum("a", 1))
	small.Put(sum("b", 1))
	p, err := small.Query(summary.Query{Limit: 2})
	require.NoError(t, err)
	require.Len(t, p.Items, 2)
	require.Empty(t, p.Next)
}

func TestIndexQueryInvalid(t *testing.T) {
	ix := filterFixture()
	tests := []struct {
		name string
		q    summary.Query
	}{
		{"unknown order", summary.Query{Order: "random"}},
		{"negative limit", summary.Query{Limit: -1}},
		{"unknown state", summary.Query{States: []session.State{"sleeping"}}},
		{"unknown kind", summary.Query{Kinds: []session.SessionKind{"robot"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Query(tt.q)
			require.Error(t, err)
		})
	}
}

func TestIndexQueryBadCursor(t *testing.T) {
	ix := filterFixture()
	first, err := ix.Query(summary.Query{Limit: 1, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle, session.StateRunning}})
	require.NoError(t, err)
	require.NotEmpty(t, first.Next)

	tests := []struct {
		name string
		q    summary.Query
	}{
		{"not base64", summary.Query{Cursor: "!!!"}},
		{"not json", summary.Query{Cursor: base64.RawURLEncoding.EncodeToString([]byte("nope"))}},
		{"oversized", summary.Query{Cursor: base64.RawURLEncoding.EncodeToString(make([]byte, 5000))}},
		{"other order", summary.Query{Cursor: first.Next, Order: summary.OrderCreatedDesc, States: []session.State{session.StateIdle, session.StateRunning}}},
		{"default order", summary.Query{Cursor: first.Next, States: []session.State{session.StateIdle, session.StateRunning}}},
		{"other states", summary.Query{Cursor: first.Next, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle}}},
		{"added kind", summary.Query{Cursor: first.Next, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle, session.StateRunning}, Kinds: []session.SessionKind{session.KindPrimary}}},
		{"added parent", summary.Query{Cursor: first.Next, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle, session.StateRunning}, ParentID: "x"}},
		{"added updated since", summary.Query{Cursor: first.Next, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle, session.StateRunning}, UpdatedSince: t0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ix.Query(tt.q)
			require.ErrorIs(t, err, summary.ErrBadCursor)
		})
	}

	// The same cursor with the same filter (any limit) resumes.
	p, err := ix.Query(summary.Query{Cursor: first.Next, Limit: 10, Order: summary.OrderCreatedAsc, States: []session.State{session.StateIdle, session.StateRunning}})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
}

// TestIndexPagingUnderChurn is a property test: while a listing is paged,
// other sessions are created, updated and deleted between pages; every
// session that is not touched during the paging appears exactly once, in
// order. Seeds are fixed so failures reproduce.
func TestIndexPagingUnderChurn(t *testing.T) {
	orders := []summary.Order{summary.OrderUpdatedDesc, summary.OrderUpdatedAsc, summary.OrderCreatedDesc, summary.OrderCreatedAsc, summary.OrderIDAsc}
	for seed := range uint64(8) {
		for _, order := range orders {
			t.Run(fmt.Sprintf("seed=%d/order=%s", seed, order), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 0xdecafbad))
				ix := summary.NewIndex()
				stable := map[session.SessionID]bool{}
				for i := range 60 + r.IntN(60) {
					id := fmt.Sprintf("stable-%03d", i)
					// Coarse times make ties common, so the ID tiebreak is exercised.
					ix.Put(sum(id, 1, withCreated(time.Duration(r.IntN(20))*time.Second), withUpdated(time.Duration(r.IntN(20))*time.Second)))
					stable[session.SessionID(id)] = true
				}
				churn := map[session.SessionID]uint64{}
				for i := range 30 {
					id := session.SessionID(fmt.Sprintf("churn-%03d", i))
					churn[id] = 1
					ix.Put(sum(string(id), 1, withCreated(time.Duration(r.IntN(20))*time.Second)))
				}

				q := summary.Query{Order: order, Limit: 1 + r.IntN(9)}
				seen := map[session.SessionID]int{}
				var got []summary.Summary
				for range 10_000 {
					p, err := ix.Query(q)
					require.NoError(t, err)
					got = append(got, p.Items...)
					for _, s := range p.Items {
						seen[s.ID]++
					}
					// Churn between pages: new revisions with times anywhere
					// (including the past and the future), deletions, births.
					for range r.IntN(6) {
						id := session.SessionID(fmt.Sprintf("churn-%03d", r.IntN(40)))
						if r.IntN(5) == 0 {
							ix.Delete(id)
							delete(churn, id)
							continue
						}
						churn[id]++
						ix.Put(sum(string(id), churn[id],
							withCreated(time.Duration(r.IntN(20))*time.Second),
							withUpdated(time.Duration(r.IntN(40)-10)*time.Second)))
					}
					if p.Next == "" {
						break
					}
					q.Cursor = p.Next
				}
				for id := range stable {
					require.Equal(t, 1, seen[id], "stable session %s", id)
				}
				// The stable sessions came out in order.
				var keys []summary.Key
				for _, s := range got {
					if stable[s.ID] {
						keys = append(keys, summary.KeyOf(order, &s))
					}
				}
				require.True(t, slices.IsSortedFunc(keys, func(a, b summary.Key) int { return summary.Compare(order, a, b) }))
			})
		}
	}
}

// TestIndexPagingConcurrentPuts is the same property with real concurrency:
// goroutines Put other sessions while the listing is paged (run with -race).
func TestIndexPagingConcurrentPuts(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ix := summary.NewIndex()
			r := rand.New(rand.NewPCG(seed, 42))
			for i := range 200 {
				ix.Put(sum(fmt.Sprintf("stable-%03d", i), 1, withUpdated(time.Duration(r.IntN(50))*time.Second)))
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for rev := uint64(1); ; rev++ {
						select {
						case <-stop:
							return
						default:
						}
						id := fmt.Sprintf("churn-%d-%02d", g, r.IntN(20))
						if r.IntN(4) == 0 {
							ix.Delete(session.SessionID(id))
							continue
						}
						ix.Put(sum(id, rev, withUpdated(time.Duration(r.IntN(100)-25)*time.Second)))
					}
				})
			}
			for _, order := range []summary.Order{summary.OrderUpdatedDesc, summary.OrderUpdatedAsc, summary.OrderIDAsc} {
				got := queryAll(t, ix, summary.Query{Order: order, Limit: 1 + r.IntN(13)})
				seen := map[session.SessionID]int{}
				for _, s := range got {
					seen[s.ID]++
				}
				for i := range 200 {
					require.Equal(t, 1, seen[session.SessionID(fmt.Sprintf("stable-%03d", i))], "order %s", order)
				}
			}
			close(stop)
			wg.Wait()
		})
	}
}

// recv receives one change, failing if none is ready once every goroutine
// in the bubble is blocked.
func recv(t *testing.T, sub *summary.Subscription) summary.Change {
	t.Helper()
	synctest.Wait()
	select {
	case c, ok := <-sub.C():
		require.True(t, ok, "channel closed")
		return c
	default:
		t.Fatal("no change ready")
		return summary.Change{}
	}
}

// requireQuiet asserts that nothing more is pending.
func requireQuiet(t *testing.T, sub *summary.Subscription) {
	t.Helper()
	synctest.Wait()
	select {
	case c, ok := <-sub.C():
		t.Fatalf("unexpected change %+v (open %v)", c, ok)
	default:
	}
}

func TestSubscribeInitialStateThenChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := summary.NewIndex()
		ix.Put(sum("b", 2))
		ix.Put(sum("a", 1))
		sub := ix.Subscribe(t.Context())
		defer sub.Close()

		// The current state first, in ID order.
		c := recv(t, sub)
		require.Equal(t, session.SessionID("a"), c.ID)
		require.Equal(t, uint64(1), c.Summary.Revision)
		c = recv(t, sub)
		require.Equal(t, session.SessionID("b"), c.ID)
		require.Equal(t, uint64(2), c.Summary.Revision)
		requireQuiet(t, sub)

		ix.Put(sum("c", 1))
		c = recv(t, sub)
		require.Equal(t, summary.Change{ID: "c", Summary: sum("c", 1)}, c)

		ix.Delete("a")
		c = recv(t, sub)
		require.Equal(t, summary.Change{ID: "a", Deleted: true}, c)

		ix.Put(sum("b", 1)) // stale: no event
		requireQuiet(t, sub)
	})
}

func TestSubscribeCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := summary.NewIndex()
		sub := ix.Subscribe(t.Context())
		defer sub.Close()

		// The receiver lags: many changes to few IDs pile up without
		// blocking Put, and only the latest per ID is delivered, in the
		// order each ID first became pending.
		for rev := uint64(1); rev <= 1000; rev++ {
			ix.Put(sum("a", rev))
			if rev == 10 {
				ix.Put(sum("b", 1))
			}
			if rev == 20 {
				ix.Put(sum("c", 1))
			}
		}
		ix.Delete("b")
		ix.Put(sum("b", 7))

		c := recv(t, sub)
		require.Equal(t, session.SessionID("a"), c.ID)
		require.Equal(t, uint64(1000), c.Summary.Revision)
		c = recv(t, sub)
		require.Equal(t, session.SessionID("b"), c.ID)
		require.False(t, c.Deleted)
		require.Equal(t, uint64(7), c.Summary.Revision)
		c = recv(t, sub)
		require.Equal(t, session.SessionID("c"), c.ID)
		requireQuiet(t, sub)

		// A deletion after the last delivery is delivered as such.
		ix.Put(sum("c", 2))
		ix.Delete("c")
		c = recv(t, sub)
		require.Equal(t, summary.Change{ID: "c", Deleted: true}, c)
		requireQuiet(t, sub)
	})
}

func TestSubscribeDeliversCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := summary.NewIndex()
		s := sum("a", 1)
		s.Lease.Holder = &summary.Holder{Label: "orig"}
		ix.Put(s)
		sub1 := ix.Subscribe(t.Context())
		defer sub1.Close()
		sub2 := ix.Subscribe(t.Context())
		defer sub2.Close()
		c1 := recv(t, sub1)
		c1.Summary.Lease.Holder.Label = "mutated"
		c2 := recv(t, sub2)
		require.Equal(t, "orig", c2.Summary.Lease.Holder.Label)
		got, _ := ix.Get("a")
		require.Equal(t, "orig", got.Lease.Holder.Label)
	})
}

// TestSubscribeConverges runs writers and slow readers concurrently; once
// the writers stop, every reader's view equals the index.
func TestSubscribeConverges(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ix := summary.NewIndex()
			for i := range 10 {
				ix.Put(sum(fmt.Sprintf("pre-%d", i), 1))
			}
			ctx := t.Context()
			const readers = 3
			views := make([]map[session.SessionID]uint64, readers)
			var mus [readers]sync.Mutex
			var rwg sync.WaitGroup
			subs := make([]*summary.Subscription, readers)
			for i := range readers {
				views[i] = map[session.SessionID]uint64{}
				subs[i] = ix.Subscribe(ctx)
				rwg.Go(func() {
					for c := range subs[i].C() {
						mus[i].Lock()
						if c.Deleted {
							delete(views[i], c.ID)
						} else {
							views[i][c.ID] = c.Summary.Revision
						}
						mus[i].Unlock()
					}
				})
			}

			var wg sync.WaitGroup
			var revMu sync.Mutex
			revs := map[session.SessionID]uint64{}
			for g := range 4 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 2000 {
						id := session.SessionID(fmt.Sprintf("s-%d", r.IntN(30)))
						revMu.Lock()
						if r.IntN(6) == 0 {
							ix.Delete(id)
							delete(revs, id)
						} else {
							revs[id]++
							ix.Put(sum(string(id), revs[id]))
						}
						revMu.Unlock()
					}
				})
			}
			wg.Wait()

			want := map[session.SessionID]uint64{}
			p, err := ix.Query(summary.Query{Limit: summary.MaxLimit})
			require.NoError(t, err)
			for _, s := range p.Items {
				want[s.ID] = s.Revision
			}
			for i := range readers {
				require.Eventually(t, func() bool {
					mus[i].Lock()
					defer mus[i].Unlock()
					return fmt.Sprint(views[i]) == fmt.Sprint(want)
				}, 10*time.Second, time.Millisecond, "reader %d did not converge", i)
			}
			for _, s := range subs {
				s.Close()
			}
			rwg.Wait()
		})
	}
}

func TestSubscribeEnds(t *testing.T) {
	drained := func(t *testing.T, sub *summary.Subscription) {
		t.Helper()
		synctest.Wait()
		for {
			select {
			case _, ok := <-sub.C():
				if !ok {
					return
				}
			default:
				t.Fatal("channel not closed")
			}
		}
	}
	tests := []struct {
		name string
		end  func(ix *summary.Index, sub *summary.Subscription, cancel context.CancelFunc)
	}{
		{"context cancelled", func(_ *summary.Index, _ *summary.Subscription, cancel context.CancelFunc) { cancel() }},
		{"subscription closed", func(_ *summary.Index, sub *summary.Subscription, _ context.CancelFunc) { sub.Close() }},
		{"index closed", func(ix *summary.Index, _ *summary.Subscription, _ context.CancelFunc) { ix.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := summary.NewIndex()
				ix.Put(sum("a", 1)) // pending, never received
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				sub := ix.Subscribe(ctx)
				tt.end(ix, sub, cancel)
				drained(t, sub)
				sub.Close() // idempotent
				ix.Put(sum("a", 2))
			})
		})
	}

	t.Run("subscribe after index closed", func(t *testing.T) {
		ix := summary.NewIndex()
		ix.Put(sum("a", 1))
		ix.Close()
		sub := ix.Subscribe(t.Context())
		_, ok := <-sub.C()
		require.False(t, ok)
		sub.Close()
		// The index still answers queries.
		p, err := ix.Query(summary.Query{})
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
	})

	t.Run("many subscribe and close", func(t *testing.T) {
		ix := summary.NewIndex()
		ix.Put(sum("a", 1))
		for range 100 {
			sub := ix.Subscribe(t.Context())
			sub.Close()
		}
		// Everything has unregistered: Close has nothing left to close,
		// and goleak (TestMain) finds no goroutine.
		ix.Close()
	})
}

func TestPutDoesNotBlockOnSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := summary.NewIndex()
		sub := ix.Subscribe(t.Context())
		defer sub.Close()
		for i := range 10_000 {
			ix.Put(sum(fmt.Sprintf("s-%05d", i), 1))
		}
		// The receiver has taken nothing; all 10k are pending, each once.
		n := 0
		for {
			synctest.Wait()
			select {
			case <-sub.C():
				n++
				continue
			default:
			}
			break
		}
		require.Equal(t, 10_000, n)
	})
}

// TestIndexUnreadable: a session marked unreadable leaves the listing and
// is reported on every page, whatever the query; subscribers are told
// (once per reason), a new subscriber first; a Put makes it read again
// and a Delete forgets it. Apply replays a subscription into another
// index.
func TestIndexUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := summary.NewIndex()
		ix.Put(sum("a", 1))
		ix.Put(sum("b", 3))
		ix.Put(sum("c", 1))
		cause := errors.New("log.jsonl is missing")
		ix.PutUnreadable(summary.UnreadableOf("b", cause))
		ix.PutUnreadable(summary.UnreadableOf("z", cause)) // never had a summary

		page, err := ix.Query(summary.Query{Order: summary.OrderIDAsc, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []session.SessionID{"a"}, idsOf(page.Items))
		require.Equal(t, []session.SessionID{"b", "z"}, unreadableIDs(page.Unreadable))
		require.ErrorIs(t, page.Unreadable[0].Err, cause)
		require.Equal(t, cause.Error(), page.Unreadable[0].Reason)
		page, err = ix.Query(summary.Query{Order: summary.OrderIDAsc, Limit: 1, Cursor: page.Next})
		require.NoError(t, err)
		require.Equal(t, []session.SessionID{"c"}, idsOf(page.Items))
		require.Equal(t, []session.SessionID{"b", "z"}, unreadableIDs(page.Unreadable), "every page reports them")
		require.Equal(t, 2, ix.Len())
		_, ok := ix.Get("b")
		require.False(t, ok)

		sub := ix.Subscribe(t.Context())
		defer sub.Close()
		mirror := summary.NewIndex()
		for _, want := range []session.SessionID{"a", "b", "c", "z"} {
			c := recv(t, sub)
			require.Equal(t, want, c.ID)
			require.Equal(t, want == "b" || want == "z", c.Unreadable != nil, "%+v", c)
			mirror.Apply(c)
		}
		requireQuiet(t, sub)
		require.Equal(t, ix.Unreadable(), mirror.Unreadable())

		ix.PutUnreadable(summary.UnreadableOf("b", cause)) // the same again: no event
		requireQuiet(t, sub)
		ix.PutUnreadable(summary.UnreadableOf("a", errors.New("permission denied")))
		c := recv(t, sub)
		require.Equal(t, session.SessionID("a"), c.ID)
		require.Equal(t, "permission denied", c.Unreadable.Reason)
		require.Zero(t, c.Summary)

		ix.Put(sum("b", 1)) // reads again, at whatever revision
		c = recv(t, sub)
		require.Equal(t, summary.Change{ID: "b", Summary: sum("b", 1)}, c)
		require.True(t, ix.Delete("z"))
		require.Equal(t, summary.Change{ID: "z", Deleted: true}, recv(t, sub))
		require.False(t, ix.Delete("z"))
		require.Equal(t, []session.SessionID{"a"}, unreadableIDs(ix.Unreadable()))
	})
}

func idsOf(items []summary.Summary) []session.SessionID {
	out := make([]session.SessionID, len(items))
	for i := range items {
		out[i] = items[i].ID
	}
	return out
}

func unreadableIDs(us []summary.Unreadable) []session.SessionID {
	out := make([]session.SessionID, len(us))
	for i := range us {
		out[i] = us[i].ID
	}
	return out
}
