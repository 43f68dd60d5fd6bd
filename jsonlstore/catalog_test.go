package jsonlstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// catClock is a test clock that the store and the Sim share: it ticks a
// microsecond at every reading, so that no two changes share a time, and
// Advance moves it on (to let the root settle, catalog.Settled).
type catClock struct {
	mu sync.Mutex
	t  time.Time
}

func newCatClock() *catClock { return &catClock{t: sessiontest.Epoch} }

func (c *catClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Microsecond)
	return c.t
}

func (c *catClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// catEnv is a store on a Sim with its clock and leases, and another
// handle on the same files, as another process would open them.
type catEnv struct {
	sim    *vfs.Sim
	fs     vfs.FS // what the stores write through (the Sim, or a Faulty over it)
	clock  *catClock
	leases *simLeaser
	st     *Store
}

const catRoot = "/sim/catalog"

func newCatEnv(t testing.TB) *catEnv {
	e := &catEnv{sim: vfs.NewSim(), clock: newCatClock()}
	e.sim.SetClock(e.clock.Now)
	e.fs = e.sim
	e.leases = newSimLeaser(e.sim, catRoot)
	e.st = e.open(t)
	return e
}

// open returns another store on the env's files: a fresh process's view
// (no cache), sharing the leases (which are across processes).
func (e *catEnv) open(t testing.TB) *Store {
	st := newStore(catRoot, nil, e.fs, e.leases, Options{Now: e.clock.Now})
	t.Cleanup(func() { st.Close() })
	return st
}

// catSnap is the snapshot of session id at its step n: every field a
// listing filters or orders by varies with (id, n).
func catSnap(t testing.TB, id session.SessionID, n int, r *rand.Rand) sessnap.Snapshot {
	s := sessiontest.New(string(id))
	require.NoError(t, s.SetTitle(fmt.Sprintf("%s step %d", id, n), session.TitleExplicit))
	if r.IntN(3) > 0 {
		require.NoError(t, s.SetLabel("team", []string{"a", "b", "c"}[r.IntN(3)]))
	}
	if r.IntN(4) == 0 {
		require.NoError(t, s.SetLabel("pinned", ""))
	}
	projects := []string{"", "/src/app", "/src/app/sub", "/src/lib"}
	require.NoError(t, s.SetWorkspace(session.Workspace{Project: projects[r.IntN(len(projects))]}))
	if r.IntN(2) == 0 {
		require.NoError(t, s.BeginTurn())
	}
	return sessiontest.Snap(t, s)
}

// catQueries are the queries the model test pages through.
func catQuery(r *rand.Rand) summary.Query {
	q := summary.Query{
		Order: []summary.Order{summary.OrderUpdatedDesc, summary.OrderUpdatedAsc, summary.OrderCreatedDesc, summary.OrderIDAsc}[r.IntN(4)],
		Limit: 1 + r.IntN(6),
	}
	switch r.IntN(6) {
	case 0:
		q.Labels = map[string]string{"team": "a"}
	case 1:
		q.Project, q.ProjectTree = "/src/app", true
	case 2:
		q.States = []session.State{session.StateRunning}
	case 3:
		q.Labels = map[string]string{"pinned": ""}
	}
	return q
}

// requireListsAsScan pages through q with List and with the lister's Scan, the
// listing that reads every session, and requires the same pages.
func requireListsAsScan(t testing.TB, st *Store, q summary.Query, what string) {
	t.Helper()
	ctx := context.Background()
	for pages := 0; ; pages++ {
		require.Less(t, pages, 200)
		want, err := st.lister.Scan(ctx, q)
		require.NoError(t, err)
		got, err := st.List(ctx, q)
		require.NoError(t, err, what)
		require.Equal(t, pageKeys(want), pageKeys(got), "%s: %+v", what, q)
		require.Equal(t, want.Next, got.Next, "%s: cursor, %+v", what, q)
		require.Equal(t, unreadableIDs(want), unreadableIDs(got), what)
		if got.Next == "" {
			return
		}
		q.Cursor = got.Next
	}
}

// pageKeys is what must agree of two listings: each item's ID, revision,
// update time and labels, in order.
func pageKeys(p summary.Page) []string {
	out := make([]string, len(p.Items))
	for i, s := range p.Items {
		out[i] = fmt.Sprintf("%s@%d %s %v %s %s", s.ID, s.Revision, s.UpdatedAt.Format(time.RFC3339Nano), s.Labels, s.Project, s.Title)
	}
	return out
}

func unreadableIDs(p summary.Page) []session.SessionID {
	var out []session.SessionID
	for _, u := range p.Unreadable {
		out = append(out, u.ID)
	}
	return out
}

// requireCatalogSound checks what lets a listing believe the catalog
// without looking: every entry of a session that has no mark describes
// its log as it is (internal/catalogfile). A catalog that cannot be used (missing,
// damaged, of other marks) claims nothing.
func requireCatalogSound(t testing.TB, st *Store, what string) {
	t.Helper()
	if err := catalogSound(st); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func catalogSound(st *Store) error {
	marks, err := st.cat.ReadMarks()
	if err != nil {
		return nil //nolint:nilerr // no marks to read: no catalog is believed
	}
	b, err := vfs.ReadFile(st.fs, catalogfile.Path, 1<<30)
	if err != nil {
		return nil //nolint:nilerr // no catalog
	}
	f, err := catalog.Decode(bytes.NewReader(b), int64(len(b)))
	if err != nil || !marks.Trusts(f) {
		return nil //nolint:nilerr // a catalog no listing believes
	}
	for i := range f.Len() {
		e, err := f.Entry(i)
		if err != nil {
			return fmt.Errorf("a believed catalog: %w", err)
		}
		if len(marks.Gens[e.ID]) > 0 || e.Unreadable {
			continue
		}
		sum, stt, err := catalogfile.Current(context.Background(), st.root, e.ID)
		if errors.Is(err, sessionstore.ErrNotFound) {
			continue // deleted: the root's state says so
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", e.ID, err)
		}
		if stt != e.Log || sum.Revision != e.Revision || !sum.UpdatedAt.Equal(e.Updated) {
			return fmt.Errorf("catalog entry of %s (rev %d, log %+v) is not its log (rev %d, log %+v), and it has no mark", e.ID, e.Revision, e.Log, sum.Revision, stt)
		}
	}
	return nil
}

// catTamper damages the catalog's files one way, as the lead's list of
// states says they may be: missing, torn, garbage, from a newer or older
// program, deleted by hand, their marks directory replaced, a stale root
// file.
var catTamper = []struct {
	name string
	do   func(t testing.TB, sim *vfs.Sim, r *rand.Rand)
}{
	{"catalog deleted", func(_ testing.TB, sim *vfs.Sim, _ *rand.Rand) { _ = sim.Remove(catalogfile.Path) }},
	{"catalog directory deleted", func(_ testing.TB, sim *vfs.Sim, _ *rand.Rand) { _ = sim.RemoveAll(CatalogDir) }},
	{"catalog torn", func(t testing.TB, sim *vfs.Sim, r *rand.Rand) {
		catRewrite(t, sim, catalogfile.Path, func(b []byte) []byte { return b[:r.IntN(len(b))] })
	}},
	{"catalog byte flipped", func(t testing.TB, sim *vfs.Sim, r *rand.Rand) {
		catRewrite(t, sim, catalogfile.Path, func(b []byte) []byte { b[r.IntN(len(b))] ^= 1 << r.IntN(8); return b })
	}},
	{"catalog garbage", func(t testing.TB, sim *vfs.Sim, r *rand.Rand) {
		catRewrite(t, sim, catalogfile.Path, func(b []byte) []byte {
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			return b
		})
	}},
	{"catalog empty", func(t testing.TB, sim *vfs.Sim, _ *rand.Rand) {
		catRewrite(t, sim, catalogfile.Path, func([]byte) []byte { return nil })
	}},
	{"catalog of a newer version", func(t testing.TB, sim *vfs.Sim, _ *rand.Rand) { catVersion(t, sim, catalog.Version+1) }},
	{"catalog of an older version", func(t testing.TB, sim *vfs.Sim, _ *rand.Rand) { catVersion(t, sim, 0) }},
	{"marks directory deleted", func(_ testing.TB, sim *vfs.Sim, _ *rand.Rand) { _ = sim.RemoveAll(catalogfile.MarksDir) }},
	{"marks directory made again", func(_ testing.TB, sim *vfs.Sim, _ *rand.Rand) {
		_ = sim.RemoveAll(catalogfile.MarksDir)
		_ = sim.Mkdir(catalogfile.MarksDir, layout.DirPerm)
	}},
	{"root file deleted", func(_ testing.TB, sim *vfs.Sim, _ *rand.Rand) { _ = sim.Remove(catalogfile.RootPath) }},
	{"root file garbage", func(t testing.TB, sim *vfs.Sim, _ *rand.Rand) {
		catRewrite(t, sim, catalogfile.RootPath, func(b []byte) []byte { return bytes.Repeat([]byte{'x'}, len(b)) })
	}},
}

// catRewrite replaces name's content by edit's result, when it exists.
func catRewrite(t testing.TB, sim *vfs.Sim, name string, edit func([]byte) []byte) {
	b, err := sim.ReadFile(name)
	if err != nil || len(b) == 0 {
		return
	}
	f, err := sim.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.Write(edit(b))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// catVersion gives the catalog another version, with a valid checksum.
func catVersion(t testing.TB, sim *vfs.Sim, v uint32) {
	catRewrite(t, sim, catalogfile.Path, func(b []byte) []byte {
		if len(b) < catalog.HeaderSize {
			return b
		}
		binary.LittleEndian.PutUint32(b[8:], v)
		binary.LittleEndian.PutUint32(b[catalog.HeaderSize-4:], crc32.Checksum(b[:catalog.HeaderSize-4], crc32.MakeTable(crc32.Castagnoli)))
		return b
	})
}

// catModel is the model test's state: the sessions, and the writers it
// holds.
type catModel struct {
	t       testing.TB
	e       *catEnv
	r       *rand.Rand
	stores  []*Store // handles, as processes: listings and writers use any
	held    map[session.SessionID]sessionstore.Writer
	steps   map[session.SessionID]int
	next    int
	served  int64
	trusted bool // the last listing was answered from the catalog
	// tampered: the model damaged the catalog's files at some step.
	tampered bool
}

func (m *catModel) store() *Store { return m.stores[m.r.IntN(len(m.stores))] }

func (m *catModel) ids() []session.SessionID {
	return slices.Sorted(maps.Keys(m.steps))
}

func (m *catModel) create() {
	id := session.SessionID(fmt.Sprintf("s%03d", m.next))
	m.next++
	w, err := m.store().Create(context.Background(), catSnap(m.t, id, 0, m.r), sessionstore.AcquireOptions{Label: "model"})
	require.NoError(m.t, err)
	m.steps[id] = 1
	if m.r.IntN(2) == 0 {
		m.held[id] = w
	} else {
		require.NoError(m.t, w.Release(context.Background()))
	}
}

func (m *catModel) writer(id session.SessionID) sessionstore.Writer {
	if w, ok := m.held[id]; ok {
		return w
	}
	w, err := m.store().Acquire(context.Background(), id, sessionstore.AcquireOptions{Label: "model"})
	require.NoError(m.t, err)
	m.held[id] = w
	return w
}

func (m *catModel) appendTo(id session.SessionID) {
	w := m.writer(id)
	_, err := w.Append(context.Background(), w.Revision(), catSnap(m.t, id, m.steps[id], m.r))
	require.NoError(m.t, err)
	m.steps[id]++
}

func (m *catModel) release(id session.SessionID) {
	if w, ok := m.held[id]; ok {
		require.NoError(m.t, w.Release(context.Background()))
		delete(m.held, id)
	}
}

func (m *catModel) remove(id session.SessionID) {
	require.NoError(m.t, m.writer(id).Delete(context.Background()))
	delete(m.held, id)
	delete(m.steps, id)
}

// step does one random thing, and then checks.
func (m *catModel) step() string {
	ids := m.ids()
	pick := func() session.SessionID { return ids[m.r.IntN(len(ids))] }
	var what string
	switch n := m.r.IntN(100); {
	case n < 15 || len(ids) < 3:
		m.create()
		what = "create"
	case n < 45:
		id := pick()
		m.appendTo(id)
		what = "append " + string(id)
	case n < 55:
		id := pick()
		m.release(id)
		what = "release " + string(id)
	case n < 60:
		id := pick()
		m.remove(id)
		what = "delete " + string(id)
	case n < 68:
		k := m.r.IntN(len(catTamper))
		catTamper[k].do(m.t, m.e.sim, m.r)
		m.tampered = true
		what = "tamper: " + catTamper[k].name
	case n < 78:
		m.e.clock.Advance(catalog.SettleTime + time.Duration(m.r.IntN(1000))*time.Millisecond)
		what = "time passes"
	case n < 80:
		_, err := m.store().Reindex(context.Background())
		require.NoError(m.t, err)
		what = "reindex"
	default:
		what = "list"
	}
	st := m.store()
	before := st.lister.Counts.Catalog.Load()
	requireListsAsScan(m.t, st, catQuery(m.r), what)
	m.trusted = st.lister.Counts.Catalog.Load() > before
	if m.trusted {
		m.served++
	}
	requireCatalogSound(m.t, st, what)
	// VerifyCatalog agrees: it finds no claim a log contradicts, and
	// bytes that fail their checks only where the model damaged them.
	rep, err := st.VerifyCatalog(context.Background())
	require.NoError(m.t, err, what)
	for _, p := range rep.Problems {
		require.True(m.t, m.tampered && strings.HasPrefix(p, catalogfile.Path+": "), "after %s: verify reports %q", what, p)
	}
	return what
}

// TestCatalogModel runs random workloads — sessions created, appended to,
// held, released and deleted through several handles (as processes), the
// catalog's files damaged every way catTamper knows, time passing, rebuilds
// — and after every step requires that List pages exactly as the scan of
// every session does, and that the catalog on disk claims nothing its logs
// contradict. Over many seeds, at least some listings must have been
// answered from the catalog, and some after each kind of damage.
func TestCatalogModel(t *testing.T) {
	seeds := 300
	if testing.Short() || raceEnabled {
		seeds = 40
	}
	seeds = proctest.EnvInt(t, "JSONLSTORE_CATALOG_SEEDS", seeds)
	steps := 60
	var served, lists int64
	for seed := range uint64(seeds) {
		e := newCatEnv(t)
		m := &catModel{t: t, e: e, r: rand.New(rand.NewPCG(seed, 0x5eed)),
			stores: []*Store{e.st, e.open(t), e.open(t)},
			held:   map[session.SessionID]sessionstore.Writer{}, steps: map[session.SessionID]int{}}
		var trail []string
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			m.t = t
			for range steps {
				trail = append(trail, m.step())
			}
		})
		if !ok {
			t.Fatalf("seed %d failed after: %s", seed, strings.Join(trail, "; "))
		}
		for id := range m.held {
			m.release(id)
		}
		served += m.served
		lists += int64(steps)
	}
	t.Logf("%d of %d listings (with their pages) answered from the catalog", served, lists)
	require.Greater(t, served, lists/4, "the catalog answers most listings of a store left alone")
}
