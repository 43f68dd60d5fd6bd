package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The catalog's power-loss test: a scripted workload (ctWorkload) that
// writes catalogs while sessions are held, appended to and released,
// deletes the catalog's directory and its marks directory by hand (as rm
// does: nothing synced), and has a mark fail; crashtest takes a point at
// every sync and crashes each many ways. On every crashed state
// (ctCheck):
//
//   - the catalog claims nothing its logs contradict: every entry of a
//     session without a mark describes its log as it is (catalogSound) —
//     what lets a listing believe the entries of sessions it does not list;
//   - List pages exactly as the scan of every session does, and lists every
//     session whose creation was acknowledged, at an acknowledged revision
//     or later.
//
// The sync-mutation test (TestCatalogSyncMutation) silences each of the
// catalog's syncs in turn and requires some crashed state to fail: each
// sync the catalog makes is needed, and guarded.

const (
	ctRoot     = "/sim/catalog-crash"
	ctSeeds    = 16
	ctSeedsEnv = "JSONLSTORE_CATALOG_POWERLOSS_SEEDS"
)

var ctIDs = []session.SessionID{"ct-a", "ct-b", "ct-c", "ct-d"}

// ctAck is what the workload had been told was done.
type ctAck struct {
	created map[session.SessionID]bool
	rev     map[session.SessionID]uint64
	deleted map[session.SessionID]bool
	// deleting: a deletion was started and not acknowledged: the session
	// may be there or not.
	deleting bool
	// window, when set, is the directory whose sync makes a deletion by
	// hand durable: until then the catalog may be one a power loss took
	// half its marks from (see byHand).
	window string
}

func (a ctAck) clone() ctAck {
	c := ctAck{created: map[session.SessionID]bool{}, rev: map[session.SessionID]uint64{}, deleted: map[session.SessionID]bool{}, deleting: a.deleting, window: a.window}
	for k, v := range a.created {
		c.created[k] = v
	}
	for k, v := range a.rev {
		c.rev[k] = v
	}
	for k, v := range a.deleted {
		c.deleted[k] = v
	}
	return c
}

// ctRun is one run of the workload.
type ctRun struct {
	*crashtest.Recorder[ctAck]
	clock *catClock
}

// ctWorkload runs the workload, with sync call number mutate (≥ 0)
// silenced.
func ctWorkload(t testing.TB, mutate int) *ctRun {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[ctAck](mutate)
	defer rec.Stop()
	clock := newCatClock()
	rec.Sim.SetClock(clock.Now)
	run := &ctRun{Recorder: rec, clock: clock}
	rec.Ack = ctAck{created: map[session.SessionID]bool{}, rev: map[session.SessionID]uint64{}, deleted: map[session.SessionID]bool{}}
	leases := newSimLeaser(rec.Sim, ctRoot)
	st := newStore(ctRoot, nil, rec.FS, leases, Options{Now: clock.Now})
	t.Cleanup(func() { st.Close() })
	r := rand.New(rand.NewPCG(7, 7))
	writers := map[session.SessionID]sessionstore.Writer{}
	// The acknowledgment maps are shared with the points taken so far:
	// each change copies them first.
	ack := func(edit func(a *ctAck)) {
		a := rec.Ack.clone()
		edit(&a)
		rec.Ack = a
	}
	var closeWindow func()
	step := func(name string, fn func()) {
		rec.Step = name
		fn()
		if closeWindow != nil {
			closeWindow()
		}
		rec.Mark(name)
	}
	create := func(id session.SessionID) {
		step("create "+string(id), func() {
			w, err := st.Create(ctx, catSnap(t, id, 0, r), sessionstore.AcquireOptions{})
			require.NoError(t, err)
			writers[id] = w
			ack(func(a *ctAck) { a.created[id], a.rev[id] = true, 1 })
		})
	}
	acquire := func(id session.SessionID) {
		step("acquire "+string(id), func() {
			w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			writers[id] = w
		})
	}
	appendTo := func(id session.SessionID) {
		step("append "+string(id), func() {
			w := writers[id]
			rev, err := w.Append(ctx, w.Revision(), catSnap(t, id, int(w.Revision()), r))
			require.NoError(t, err)
			ack(func(a *ctAck) { a.rev[id] = rev })
		})
	}
	release := func(id session.SessionID) {
		step("release "+string(id), func() {
			require.NoError(t, writers[id].Release(ctx))
			delete(writers, id)
		})
	}
	reindex := func(n int) {
		step(fmt.Sprintf("reindex %d", n), func() {
			clock.Advance(catalog.SettleTime)
			_, err := st.Reindex(ctx)
			require.NoError(t, err)
		})
	}
	list := func(n int) {
		step(fmt.Sprintf("list %d", n), func() {
			clock.Advance(catalog.SettleTime)
			_, err := st.List(ctx, summary.Query{})
			require.NoError(t, err)
		})
	}
	// A rewrite of the catalog that another process makes at a chosen
	// moment: it looks (steps 1 and 2) through a store of its own over the
	// Sim — a hook of the workload runs it in the middle of another call,
	// which a store over rec.FS could not — and writes (steps 3 to 6)
	// through st, so that its syncs are the recording's.
	var looked *catalogfile.Look
	var lookUnlock func()
	look := func(fsys vfs.FS) {
		looker := newStore(ctRoot, nil, fsys, leases, Options{Now: clock.Now})
		t.Cleanup(func() { looker.Close() })
		unlock, err := looker.cat.Lock(ctx, true)
		require.NoError(t, err)
		l, err := looker.cat.LookFor(ctx, false)
		require.NoError(t, err)
		looked, lookUnlock = l, unlock
	}
	written := func(name string) {
		step(name, func() {
			_, err := st.cat.WriteLooked(ctx, looked)
			require.NoError(t, err)
			looked.Release()
			lookUnlock()
		})
	}
	// lookWhenMarking arranges for a rewrite to look when id's next mark is
	// made (linked, or opened where no link can be made): after its holder
	// made the catalog's directories, before the mark is in them.
	lookWhenMarking := func(id session.SessionID) {
		var once atomic.Bool
		when := func(n string) bool {
			if strings.HasPrefix(n, catalogfile.MarksDir+"/"+string(id)+".") && once.CompareAndSwap(false, true) {
				look(rec.Sim)
			}
			return false
		}
		rec.FS.Inject(vfs.Fault{Op: vfs.OpLink, Times: -1, Match: when})
		rec.FS.Inject(vfs.Fault{Op: vfs.OpOpen, Times: -1, Match: when})
	}
	// byHand deletes dir as rm -rf does: nothing synced. Until the next
	// holder makes the directory again and syncs its parent — which makes
	// the deletion durable — a power loss may keep part of it: marks gone
	// from the marks directory of a catalog that comes back, which nothing
	// can tell from a catalog's writer removing them. FORMAT.md says so;
	// the check does not hold the catalog to its claims in that window
	// (ctAck.window), only the listing of every session.
	byHand := func(name, dir, closer string) {
		step(name, func() {
			require.NoError(t, rec.Sim.RemoveAll(dir))
			ack(func(a *ctAck) { a.window = closer })
		})
	}
	// The window closes after the sync of its directory: a call the store
	// made (seen by a rule that never fires, so that a silenced call
	// counts too), and whose point is the last in the window.
	var called, closed bool
	rec.FS.Inject(vfs.Fault{Op: vfs.OpSyncDir, Times: -1, Match: func(name string) bool {
		if w := rec.Ack.window; w != "" && name == w {
			called = true
		}
		return false
	}})
	closeWindow = func() {
		if closed || called {
			ack(func(a *ctAck) { a.window = "" })
			closed, called = false, false
		}
	}
	rec.OnSync = func(vfs.Op, string) {
		if closed {
			closeWindow()
		}
		if called {
			closed, called = true, false // this sync's own point is still in it
		}
	}
	// createWhileLooking creates id (and appends to it) while a rewrite of
	// the catalog looks: after it listed the marks, before it lists the
	// root. The rewrite writes after, with id's entry and without its mark.
	createWhileLooking := func(id session.SessionID) {
		step("a rewrite looks while "+string(id)+" is created", func() {
			wfs := vfs.NewFaulty(rec.Sim)
			var once atomic.Bool
			wfs.Inject(vfs.Fault{Op: vfs.OpReadDir, Times: -1, Match: func(n string) bool {
				if n == "." && once.CompareAndSwap(false, true) {
					create(id)
					appendTo(id)
				}
				return false
			}})
			look(wfs)
		})
		written("the rewrite that looked while " + string(id) + " was created writes")
		appendTo(id)
	}
	a, b, c, d := ctIDs[0], ctIDs[1], ctIDs[2], ctIDs[3]

	// Creations race with rewrites: each creation's mark must be durable
	// before its appends, or the rewrite's catalog would believe it.
	createWhileLooking(a)
	release(a)
	createWhileLooking(b)
	list(2)
	appendTo(b)
	release(b)
	reindex(3) // A and B free: their marks go
	// Acquire marks A again: reindex 3's catalog believes A otherwise.
	acquire(a)
	reindex(4)
	appendTo(a)
	createWhileLooking(c)
	list(5)
	appendTo(c)

	// The catalog's directory deleted by hand: B's holder makes it again,
	// durably, before its append — else the old directory, whose catalog
	// believes B unchanged, could come back. A rewrite looks between the
	// directories and B's mark.
	byHand("catalog deleted by hand", CatalogDir, ".")
	lookWhenMarking(b)
	acquire(b)
	appendTo(b)
	written("a rewrite that looked before B's mark writes")
	appendTo(b)
	appendTo(c) // C's mark was in the deleted directory: made again
	appendTo(a)
	release(a)
	release(b)
	release(c)
	reindex(7) // A's, B's and C's marks go: the catalog replaced must not come back

	createWhileLooking(d)
	release(d)

	// The marks directory deleted by hand: A's holder makes it again,
	// durably, before its append; a rewrite looks before A's mark.
	byHand("marks deleted by hand", catalogfile.MarksDir, CatalogDir)
	lookWhenMarking(a)
	acquire(a)
	appendTo(a)
	written("a rewrite that looked before A's mark writes")
	appendTo(a)
	release(a)
	reindex(10)
	acquire(d)
	appendTo(d)

	// A mark that cannot be made: the catalog goes instead, durably,
	// before C's append.
	var failing atomic.Bool
	cMark := func(n string) bool {
		return failing.Load() && strings.HasPrefix(n, catalogfile.MarksDir+"/"+string(c)+".")
	}
	rec.FS.Inject(vfs.Fault{Op: vfs.OpLink, Times: -1, Err: syscall.ENOSPC, Match: cMark})
	rec.FS.Inject(vfs.Fault{Op: vfs.OpOpen, Times: -1, Err: syscall.ENOSPC, Match: cMark})
	failing.Store(true)
	acquire(c)
	appendTo(c)
	failing.Store(false)
	release(c)

	step("delete ct-d", func() {
		ack(func(a *ctAck) { a.deleting = true })
		require.NoError(t, writers[d].Delete(ctx))
		delete(writers, d)
		ack(func(a *ctAck) { a.deleted[d] = true })
	})
	list(12)
	return run
}

// ctCheck judges one crashed state.
func ctCheck(crashed *vfs.Sim, p crashtest.Point[ctAck], _ crashtest.Crash, _ *rand.Rand) error {
	ctx := context.Background()
	clock := newCatClock()
	clock.Advance(24 * time.Hour) // after everything the workload did
	crashed.SetClock(clock.Now)
	st := newStore(ctRoot, nil, crashed, newSimLeaser(crashed, ctRoot), Options{Now: clock.Now})
	defer st.Close()
	if p.Ack.window == "" {
		if err := catalogSound(st); err != nil {
			return crashtest.Violate("catalog-sound", "%w", err)
		}
		qs := []summary.Query{{}, {Limit: 1}, {Limit: 2, Order: summary.OrderIDAsc}, {Labels: map[string]string{"team": "a"}}}
		for _, q := range qs {
			if err := ctListsAsScan(ctx, st, q); err != nil {
				return crashtest.Violate("lists-as-scan", "%+v: %w", q, err)
			}
		}
	}
	// Every session listed, at an acknowledged revision or later: a page
	// that holds them all proves every entry by its log.
	page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
	if err != nil {
		return crashtest.Violate("list", "%w", err)
	}
	listed := map[session.SessionID]uint64{}
	for _, s := range page.Items {
		listed[s.ID] = s.Revision
	}
	for id := range p.Ack.created {
		if p.Ack.deleted[id] {
			if _, ok := listed[id]; ok {
				return crashtest.Violate("acknowledged-delete", "%s was deleted but is listed", id)
			}
			continue
		}
		rev, ok := listed[id]
		if !ok && p.Ack.deleting && id == ctIDs[3] {
			continue // being deleted
		}
		if !ok {
			return crashtest.Violate("acknowledged-listed", "%s was created but is not listed", id)
		}
		if rev < p.Ack.rev[id] {
			return crashtest.Violate("acknowledged-revision", "%s listed at revision %d, %d was acknowledged", id, rev, p.Ack.rev[id])
		}
	}
	return nil
}

// ctListsAsScan is requireListsAsScan for a checker: an error, not a
// failed test.
func ctListsAsScan(ctx context.Context, st *Store, q summary.Query) error {
	for pages := 0; pages < 100; pages++ {
		want, err := st.lister.Scan(ctx, q)
		if err != nil {
			return err
		}
		got, err := st.List(ctx, q)
		if err != nil {
			return err
		}
		if w, g := fmt.Sprint(pageKeys(want), want.Next), fmt.Sprint(pageKeys(got), got.Next); w != g {
			return fmt.Errorf("List %s, the scan %s", g, w)
		}
		if got.Next == "" {
			return nil
		}
		q.Cursor = got.Next
	}
	return fmt.Errorf("too many pages")
}

func TestCatalogPowerLoss(t *testing.T) {
	seeds := proctest.EnvInt(t, ctSeedsEnv, ctSeeds)
	run := ctWorkload(t, -1)
	points := run.Points()
	states, distinct := crashtest.Sweep(t, points, seeds, ctCheck)
	t.Logf("%d points, %d crashed states (%d seeds each), %d distinct", len(points), states, seeds, distinct)
}

// TestCatalogSyncMutation silences each sync the catalog makes in the
// workload — marks, the directories a holder makes again, the rename of a
// new catalog, the removal of one a mark could not be made for — and
// requires that some crashed state then fails ctCheck.
func TestCatalogSyncMutation(t *testing.T) {
	base := ctWorkload(t, -1)
	var ks []int
	for k, what := range base.Syncs() {
		step, op, _ := strings.Cut(what, ": ")
		if strings.HasSuffix(step, " by hand") {
			continue // the test's own deletion, not the store's
		}
		if strings.Contains(op, " "+CatalogDir) || (op == "syncdir ." && step == "acquire "+string(ctIDs[1])) {
			ks = append(ks, k)
		}
	}
	require.NotEmpty(t, ks)
	seeds := 200
	if os.Getenv(mutEnv) == "" {
		// A normal run mutates a few of them (the full sweep: make
		// mutate-sync), so that the machinery cannot rot.
		ks, seeds = ks[:min(len(ks), 3)], mutQuickSeeds
	}
	crashtest.Mutate(t, base.Recorder, ks, seeds, 3, func(t *testing.T, k int) (*crashtest.Recorder[ctAck], crashtest.Check[ctAck]) {
		return ctWorkload(t, k).Recorder, ctCheck
	})
}
