package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// settledCatalog fills a store of e with n sessions and lists twice, time
// passing between: a catalog and a root file that vouches for it.
func settledCatalog(t *testing.T, e *catEnv, n int) {
	t.Helper()
	ctx := context.Background()
	catFill(t, e.st, n, "s")
	_, err := e.st.List(ctx, summary.Query{})
	require.NoError(t, err)
	e.clock.Advance(catalog.SettleTime)
	_, err = e.st.List(ctx, summary.Query{})
	require.NoError(t, err)
	_, ok := e.st.cat.ReadRoot()
	require.True(t, ok, "the root file is written")
}

// recodeCatalog rewrites the catalog on e's Sim with edit applied to its
// entries (their summaries read in): the same catalog ID, marks and kept
// marks, so that listings still believe it.
func recodeCatalog(t *testing.T, e *catEnv, edit func([]catalog.Entry) []catalog.Entry) {
	t.Helper()
	b, err := e.sim.ReadFile(catalogfile.Path)
	require.NoError(t, err)
	f, err := catalog.Decode(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	out := &catalog.File{ID: f.ID, Written: f.Written, MarksDev: f.MarksDev, MarksIno: f.MarksIno, Kept: f.Kept}
	for i := range f.Len() {
		en, err := f.Entry(i)
		require.NoError(t, err)
		en.Summary, err = f.Summary(i)
		require.NoError(t, err)
		out.Entries = append(out.Entries, en)
	}
	out.Entries = edit(out.Entries)
	nb, err := catalog.Encode(out)
	require.NoError(t, err)
	catRewrite(t, e.sim, catalogfile.Path, func([]byte) []byte { return nb })
}

// TestVerifyCatalog: what VerifyCatalog says of each state a catalog may
// be in. A cache's states (missing, behind the root, of marked sessions,
// not believed, a newer program's) are notes; bytes that fail their checks
// and claims a log contradicts are problems, each named.
func TestVerifyCatalog(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		do          func(t *testing.T, e *catEnv)
		wantState   maintenance.CatalogState
		wantChecked int
		wantNote    string // in a note ("": none)
		wantProblem string // in a problem ("": none)
	}{
		{name: "current", wantState: maintenance.CatalogCurrent, wantChecked: 8},
		{name: "missing", do: func(t *testing.T, e *catEnv) { require.NoError(t, e.sim.Remove(catalogfile.Path)) },
			wantState: maintenance.CatalogMissing, wantNote: "no catalog"},
		{name: "a session created since", do: func(t *testing.T, e *catEnv) { catFill(t, e.st, 1, "t") },
			wantState: maintenance.CatalogCurrent, wantChecked: 8, wantNote: "1 sessions not in the catalog yet (t000)"},
		{name: "a session deleted since", do: func(t *testing.T, e *catEnv) {
			w, err := e.st.Acquire(ctx, "s002", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, w.Delete(ctx))
		}, wantState: maintenance.CatalogCurrent, wantChecked: 7, wantNote: "1 entries of sessions since deleted"},
		{name: "a session being written", do: func(t *testing.T, e *catEnv) {
			w, err := e.st.Acquire(ctx, "s003", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			_, err = w.Append(ctx, 1, catSnap(t, "s003", 1, rand.New(rand.NewPCG(3, 3))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = w.Release(ctx) })
		}, wantState: maintenance.CatalogCurrent, wantChecked: 7},
		{name: "marks directory made again", do: func(t *testing.T, e *catEnv) {
			require.NoError(t, e.sim.RemoveAll(catalogfile.MarksDir))
			require.NoError(t, e.sim.Mkdir(catalogfile.MarksDir, layout.DirPerm))
		}, wantState: maintenance.CatalogStale, wantNote: "listings do not believe the catalog"},
		{name: "newer version", do: func(t *testing.T, e *catEnv) { catVersion(t, e.sim, catalog.Version+1) },
			wantState: maintenance.CatalogNewer, wantNote: "newer version"},
		{name: "torn", do: func(t *testing.T, e *catEnv) {
			catRewrite(t, e.sim, catalogfile.Path, func(b []byte) []byte { return b[:len(b)/2] })
		}, wantState: maintenance.CatalogDamaged, wantProblem: "catalog: damaged"},
		{name: "a summary's byte flipped", do: func(t *testing.T, e *catEnv) {
			catRewrite(t, e.sim, catalogfile.Path, func(b []byte) []byte { b[len(b)-3] ^= 4; return b })
		}, wantState: maintenance.CatalogDamaged, wantProblem: "checksum"},
		{name: "a log changed without a mark", do: func(t *testing.T, e *catEnv) { unmarkedAppend(t, e, "s004") },
			wantState: maintenance.CatalogDamaged, wantChecked: 7, wantProblem: "session s004: its log is not as its entry says, and the session has no mark"},
		{name: "an entry claims another summary", do: func(t *testing.T, e *catEnv) {
			recodeCatalog(t, e, func(es []catalog.Entry) []catalog.Entry {
				es[5].Summary = bytes.Replace(es[5].Summary, []byte(`"title":"s005 step 0"`), []byte(`"title":"not its title"`), 1)
				return es
			})
		}, wantState: maintenance.CatalogDamaged, wantChecked: 8, wantProblem: "session s005: its entry says another summary"},
		{name: "an entry claims another revision", do: func(t *testing.T, e *catEnv) {
			recodeCatalog(t, e, func(es []catalog.Entry) []catalog.Entry { es[1].Revision = 7; return es })
		}, wantState: maintenance.CatalogDamaged, wantProblem: "entry"},
		{name: "an entry claims another time", do: func(t *testing.T, e *catEnv) {
			recodeCatalog(t, e, func(es []catalog.Entry) []catalog.Entry { es[6].Updated = es[6].Updated.Add(time.Hour); return es })
		}, wantState: maintenance.CatalogDamaged, wantChecked: 8, wantProblem: "session s006: its entry says updated"},
		{name: "a session hidden", do: func(t *testing.T, e *catEnv) {
			recodeCatalog(t, e, func(es []catalog.Entry) []catalog.Entry { return es[1:] })
		}, wantState: maintenance.CatalogDamaged, wantChecked: 7, wantProblem: "it lacks s000: listings that believe it do not show them"}, // and no note that says listings read it
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCatEnv(t)
			settledCatalog(t, e, 8)
			if c.do != nil {
				c.do(t, e)
			}
			rep, err := e.open(t).VerifyCatalog(ctx)
			require.NoError(t, err)
			require.Equal(t, c.wantState, rep.State, "%+v", rep)
			require.Equal(t, c.wantChecked, rep.Checked, "%+v", rep)
			if c.wantNote == "" {
				require.Empty(t, rep.Notes)
			} else {
				require.Contains(t, strings.Join(rep.Notes, "\n"), c.wantNote)
			}
			if c.wantProblem == "" {
				require.True(t, rep.OK(), "%+v", rep)
			} else {
				require.False(t, rep.OK())
				require.Contains(t, strings.Join(rep.Problems, "\n"), c.wantProblem)
			}
			// Reindex puts every state right but a newer program's.
			_, err = e.open(t).Reindex(ctx)
			require.NoError(t, err)
			rep, err = e.open(t).VerifyCatalog(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "after reindex: %+v", rep)
			if c.wantState != maintenance.CatalogNewer {
				require.Equal(t, maintenance.CatalogCurrent, rep.State, "after reindex: %+v", rep)
			}
		})
	}
	st := newCatEnv(t).open(t)
	require.NoError(t, st.Close())
	_, err := st.VerifyCatalog(ctx)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}

// TestVerifyCatalogLive: on the real file system, with writers creating
// and appending, listings rewriting the catalog and a reindex running,
// VerifyCatalog never reports a problem.
func TestVerifyCatalogLive(t *testing.T) {
	ctx := context.Background()
	ahead := func() time.Time { return time.Now().Add(catalog.SettleTime + time.Second) }
	st := openTestStoreWith(t, Options{Now: ahead})
	catFill(t, st, 12, "s")
	_, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := Open(st.Dir(), Options{Now: ahead})
			if !assert.NoError(t, err) {
				return
			}
			defer w.Close()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch {
				case g == 0 && n%5 == 0:
					var wr sessionstore.Writer
					id := session.SessionID(fmt.Sprintf("n%d-%03d", g, n))
					if wr, err = w.Create(ctx, catSnap(t, id, 0, r), sessionstore.AcquireOptions{}); err == nil {
						err = wr.Release(ctx)
					}
				case g == 2:
					if n%7 == 0 {
						_, err = w.Reindex(ctx)
					} else {
						_, err = w.List(ctx, summary.Query{Limit: 5})
					}
				default:
					id := session.SessionID(fmt.Sprintf("s%03d", r.IntN(12)))
					var wr sessionstore.Writer
					if wr, err = w.Acquire(ctx, id, sessionstore.AcquireOptions{}); err == nil {
						if _, err = wr.Append(ctx, wr.Revision(), catSnap(t, id, n, r)); err == nil {
							err = wr.Release(ctx)
						} else {
							_ = wr.Release(ctx)
						}
					}
				}
				if !assert.NoError(t, err) {
					return
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	checked := 0
	for range 40 {
		v, err := Open(st.Dir(), Options{Now: ahead})
		require.NoError(t, err)
		rep, err := v.VerifyCatalog(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%+v", rep)
		checked += rep.Checked
		require.NoError(t, v.Close())
	}
	close(stop)
	wg.Wait()
	require.Positive(t, checked, "some entries were compared with their logs")
	rep, err := st.VerifyCatalog(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
}
