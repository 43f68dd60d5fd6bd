package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalog"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// counter counts the calls of one operation on names that match, through
// a Faulty rule that never fires.
func counter(f *vfs.Faulty, op vfs.Op, match func(string) bool) *atomic.Int64 {
	var n atomic.Int64
	f.Inject(vfs.Fault{Op: op, Times: -1, Match: func(name string) bool {
		if match(name) {
			n.Add(1)
		}
		return false
	}})
	return &n
}

// catFill creates n released sessions through st.
func catFill(t testing.TB, st *Store, n int, prefix string) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range n {
		id := session.SessionID(fmt.Sprintf("%s%03d", prefix, i))
		w, err := st.Create(context.Background(), catSnap(t, id, 0, r), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(context.Background()))
	}
}

// TestCatalogFirstPageReadsOneFile: once the catalog is written and the
// root has settled, a fresh handle's first page reads no summary.json and
// no directory listing of the root, and stats only the page's logs (and
// the next item's); a session another handle creates then shows up at
// once, by a look at the root's names.
func TestCatalogFirstPageReadsOneFile(t *testing.T) {
	ctx := context.Background()
	e := newCatEnv(t)
	catFill(t, e.st, 40, "s")
	_, err := e.st.List(ctx, summary.Query{}) // builds the catalog
	require.NoError(t, err)
	e.clock.Advance(catalog.SettleTime)
	_, err = e.st.List(ctx, summary.Query{}) // writes the root file
	require.NoError(t, err)

	f := vfs.NewFaulty(e.sim)
	summaries := counter(f, vfs.OpOpen, func(n string) bool { return strings.HasSuffix(n, "/"+SummaryFile) })
	logs := counter(f, vfs.OpLstat, func(n string) bool { return strings.HasSuffix(n, "/"+LogFile) })
	rootLists := counter(f, vfs.OpReadDir, func(n string) bool { return n == "." })
	fresh := newStore(catRoot, nil, f, e.leases, Options{Now: e.clock.Now})
	defer fresh.Close()
	page, err := fresh.List(ctx, summary.Query{Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Items, 5)
	require.Equal(t, int64(1), fresh.lister.Counts.Catalog.Load(), "answered from the catalog")
	require.Zero(t, summaries.Load(), "no summary.json read")
	require.Zero(t, rootLists.Load(), "the root's names not read")
	require.LessOrEqual(t, logs.Load(), int64(6), "a stat of each listed log (and of the next one's)")
	requireListsAsScan(t, fresh, summary.Query{Limit: 7}, "settled")

	// Another handle (another process) creates a session: the root
	// changed, and the next listing reads its names and lists it first.
	other := e.open(t)
	catFill(t, other, 1, "new-")
	served := fresh.lister.Counts.Catalog.Load()
	page, err = fresh.List(ctx, summary.Query{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"new-000"}, idsOf(page.Items))
	require.Equal(t, served+1, fresh.lister.Counts.Catalog.Load(), "still from the catalog, with the new session read")
	require.Positive(t, rootLists.Load())
}

// TestCatalogReadOnlyMedia: on a file system that refuses every write, a
// listing lists every session — from the catalog when there is one, by a
// scan otherwise — and writes nothing.
func TestCatalogReadOnlyMedia(t *testing.T) {
	ctx := context.Background()
	for _, withCatalog := range []bool{true, false} {
		t.Run(fmt.Sprintf("catalog=%v", withCatalog), func(t *testing.T) {
			e := newCatEnv(t)
			catFill(t, e.st, 12, "s")
			if withCatalog {
				_, err := e.st.List(ctx, summary.Query{})
				require.NoError(t, err)
				e.clock.Advance(catalog.SettleTime)
			}
			before := crashtest.Fingerprint(e.sim)
			ro := vfs.NewFaulty(e.sim)
			for _, op := range []vfs.Op{vfs.OpMkdir, vfs.OpRename, vfs.OpRenameNoReplace, vfs.OpRemove, vfs.OpRemoveAll, vfs.OpWrite, vfs.OpTruncate} {
				ro.Inject(vfs.Fault{Op: op, Times: -1, Err: syscall.EROFS})
			}
			st := newStore(catRoot, nil, readOnly{ro}, e.leases, Options{Now: e.clock.Now})
			defer st.Close()
			for _, q := range []summary.Query{{}, {Limit: 3}, {Order: summary.OrderIDAsc, Limit: 5}} {
				requireListsAsScan(t, st, q, "read-only")
			}
			page, err := st.List(ctx, summary.Query{Limit: summary.MaxLimit})
			require.NoError(t, err)
			require.Len(t, page.Items, 12)
			require.Equal(t, withCatalog, st.lister.Counts.Catalog.Load() > 0)
			require.Equal(t, before, crashtest.Fingerprint(e.sim), "nothing written")
		})
	}
}

// readOnly refuses to open anything for writing, as a read-only mount does.
type readOnly struct{ vfs.FS }

func (r readOnly) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EROFS}
	}
	return r.FS.OpenFile(name, flag, perm)
}

// TestCatalogLogChangedWithoutMark: a log changed behind the catalog's back
// — by a program that predates the catalog, or by hand — is caught by the
// stat that proves a listed entry: that listing scans instead, and the
// catalog is rebuilt, so later first pages are right again. Reindex puts
// it right too.
func TestCatalogLogChangedWithoutMark(t *testing.T) {
	ctx := context.Background()
	e := newCatEnv(t)
	catFill(t, e.st, 10, "s")
	_, err := e.st.List(ctx, summary.Query{})
	require.NoError(t, err)
	e.clock.Advance(catalog.SettleTime)
	_, err = e.st.List(ctx, summary.Query{})
	require.NoError(t, err)
	marks, err := e.st.cat.ReadMarks()
	require.NoError(t, err)
	require.Zero(t, marks.Count(), "the catalog accounts for every released session")

	// An older program appends revision 2 of s003, marking nothing.
	id := session.SessionID("s003")
	unmarkedAppend(t, e, id)
	st := e.open(t)
	requireListsAsScan(t, st, summary.Query{Order: summary.OrderIDAsc, Limit: 20}, "s003 listed")
	require.Positive(t, st.lister.Counts.Scanned.Load(), "the listing that met it scanned")
	page, err := st.List(ctx, summary.Query{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{id}, idsOf(page.Items), "the rebuilt catalog has it newest")
	require.Positive(t, st.lister.Counts.Catalog.Load())

	unmarkedAppend(t, e, "s005")
	_, err = e.open(t).Reindex(ctx)
	require.NoError(t, err)
	requireCatalogSound(t, st, "after reindex")
	page, err = e.open(t).List(ctx, summary.Query{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"s005"}, idsOf(page.Items))
}

// unmarkedAppend appends the next revision to session id's log as a
// program without the catalog would: a record and summary.json, no mark.
func unmarkedAppend(t testing.TB, e *catEnv, id session.SessionID) {
	t.Helper()
	st := e.open(t)
	rec, err := st.Load(context.Background(), id)
	require.NoError(t, err)
	snap := rec.Snapshot
	snap.Title = "changed behind the catalog"
	payload, err := adapter.EncodeSnapshot(id, snap, 0)
	require.NoError(t, err)
	m := record.Meta{Version: 1, Schema: sessnap.SchemaVersion, Rev: rec.Revision + 1, Gen: rec.Generation, Time: e.clock.Now().UTC(), Kind: record.KindFull}
	f, err := e.sim.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(record.Encode(m, payload))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCatalogMarks: a holder's mark is made at Acquire and Create, made
// again before an append when it was removed (with the whole catalog
// directory, say), and kept after Release until a catalog that accounts
// for the session is written; a rewrite keeps the marks of held sessions;
// Delete removes its own.
func TestCatalogMarks(t *testing.T) {
	ctx := context.Background()
	e := newCatEnv(t)
	has := func(id session.SessionID, gen uint64) bool {
		_, err := e.sim.Lstat(catalogfile.MarksDir + "/" + catalog.MarkName(id, gen))
		return err == nil
	}
	w, err := e.st.Create(ctx, sessiontest.Snap(t, sessiontest.New("a")), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.True(t, has("a", 1), "Create marks")
	require.NoError(t, e.sim.RemoveAll(CatalogDir))
	_, err = w.Append(ctx, 1, sessiontest.Snap(t, sessiontest.InState("a", session.StateRunning)))
	require.NoError(t, err)
	require.True(t, has("a", 1), "made again before the append")

	_, err = e.st.Reindex(ctx)
	require.NoError(t, err)
	require.True(t, has("a", 1), "a held session keeps its mark")
	require.NoError(t, w.Release(ctx))
	require.True(t, has("a", 1), "Release leaves it to the catalog's writer")
	rep, err := e.st.Reindex(ctx)
	require.NoError(t, err)
	require.False(t, has("a", 1), "let go once a catalog accounts for the released session")
	require.Equal(t, 1, rep.MarksRemoved)

	w, err = e.st.Acquire(ctx, "a", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.True(t, has("a", w.Generation()), "Acquire marks")
	require.NoError(t, w.Delete(ctx))
	require.False(t, has("a", 2), "Delete removes its own")
}

// TestCatalogMarksAreLinks: a mark is a name of marks/.mark (the same
// file), which is made again when it is missing; where no link can be
// made, a mark is an empty file of its own; a listing counts them alike.
func TestCatalogMarksAreLinks(t *testing.T) {
	ctx := context.Background()
	e := newCatEnv(t)
	ident := func(name string) vfs.Identity {
		fi, err := e.sim.Lstat(name)
		require.NoError(t, err, name)
		require.True(t, fi.Mode().IsRegular(), name)
		require.Zero(t, fi.Size(), name)
		return vfs.IdentityOf(fi)
	}
	mark := func(id session.SessionID) string { return catalogfile.MarksDir + "/" + catalog.MarkName(id, 1) }
	create := func(st *Store, id session.SessionID) {
		w, err := st.Create(ctx, sessiontest.Snap(t, sessiontest.New(string(id))), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	create(e.st, "a")
	create(e.st, "b")
	require.Equal(t, ident(catalogfile.MarkSource), ident(mark("a")))
	require.Equal(t, ident(catalogfile.MarkSource), ident(mark("b")))

	require.NoError(t, e.sim.Remove(catalogfile.MarkSource))
	create(e.st, "c")
	require.Equal(t, ident(catalogfile.MarkSource), ident(mark("c")), "made again")
	require.NotEqual(t, ident(mark("a")), ident(mark("c")))

	f := vfs.NewFaulty(e.sim)
	f.Inject(vfs.Fault{Op: vfs.OpLink, Times: -1, Err: syscall.EMLINK})
	st := newStore(catRoot, nil, f, e.leases, Options{Now: e.clock.Now})
	defer st.Close()
	create(st, "d")
	require.NotEqual(t, ident(catalogfile.MarkSource), ident(mark("d")), "a file of its own")
	marks, err := e.st.cat.ReadMarks()
	require.NoError(t, err)
	require.Equal(t, []string{"a.1", "b.1", "c.1", "d.1"}, marks.Names, ".mark is no mark")
	requireListsAsScan(t, e.st, summary.Query{}, "marks of both kinds")
}

// TestCatalogMarkFailureNeverFailsAnAppend: when a mark cannot be made (a
// full disk), the holder goes on: the catalog is removed instead, every
// append succeeds, and listings list every session; with the catalog's
// removal failing too, appends still succeed.
func TestCatalogMarkFailureNeverFailsAnAppend(t *testing.T) {
	ctx := context.Background()
	for _, removeFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("remove-fails=%v", removeFails), func(t *testing.T) {
			e := newCatEnv(t)
			catFill(t, e.st, 5, "s")
			_, err := e.st.List(ctx, summary.Query{})
			require.NoError(t, err)
			f := vfs.NewFaulty(e.sim)
			isMark := func(n string) bool { return strings.HasPrefix(n, catalogfile.MarksDir+"/") }
			// A full disk refuses a mark's link as it refuses its file.
			f.Inject(vfs.Fault{Op: vfs.OpLink, Times: -1, Err: syscall.ENOSPC, Match: isMark})
			f.Inject(vfs.Fault{Op: vfs.OpOpen, Times: -1, Err: syscall.ENOSPC, Match: isMark})
			if removeFails {
				f.Inject(vfs.Fault{Op: vfs.OpRemove, Times: -1, Err: syscall.EIO, Match: func(n string) bool { return n == catalogfile.Path }})
			}
			st := newStore(catRoot, nil, f, e.leases, Options{Now: e.clock.Now})
			defer st.Close()
			w, err := st.Acquire(ctx, "s002", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			for rev := uint64(1); rev < 6; rev++ {
				_, err := w.Append(ctx, rev, catSnap(t, "s002", int(rev), rand.New(rand.NewPCG(rev, 2))))
				require.NoError(t, err, "append %d", rev+1)
			}
			if !removeFails {
				_, err := e.sim.Lstat(catalogfile.Path)
				require.ErrorIs(t, err, os.ErrNotExist, "the catalog is removed")
				requireListsAsScan(t, st, summary.Query{Limit: 2}, "no mark")
			}
			require.NoError(t, w.Release(ctx))
		})
	}
}

// TestCatalogOnDisk runs the catalog on the real file system, where the
// root's ctime, links and size are what tell a listing that sessions came
// or went: the store's clock runs ahead by catalog.SettleTime, so that the
// root settles at once.
func TestCatalogOnDisk(t *testing.T) {
	ctx := context.Background()
	ahead := func() time.Time { return time.Now().Add(catalog.SettleTime + time.Second) }
	st := openTestStoreWith(t, Options{Now: ahead})
	catFill(t, st, 20, "s")
	_, err := st.List(ctx, summary.Query{})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(st.Dir(), catalogfile.Path))
	require.FileExists(t, filepath.Join(st.Dir(), catalogfile.RootPath), "the root had settled by the store's clock")

	fresh, err := Open(st.Dir(), Options{Now: ahead})
	require.NoError(t, err)
	defer fresh.Close()
	requireListsAsScan(t, fresh, summary.Query{Limit: 4}, "fresh")
	require.Positive(t, fresh.lister.Counts.Catalog.Load())

	// Created, and deleted, by other handles.
	catFill(t, st, 1, "t")
	w, err := st.Acquire(ctx, "s007", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx))
	requireListsAsScan(t, fresh, summary.Query{Limit: 4, Order: summary.OrderIDAsc}, "after create and delete")
	page, err := fresh.List(ctx, summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	require.Len(t, page.Items, 20)

	// The whole catalog deleted by hand while a holder appends: the
	// holder marks again before its next append, and every listing lists
	// every session.
	w, err = st.Acquire(ctx, "s001", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(st.Dir(), CatalogDir)))
	requireListsAsScan(t, fresh, summary.Query{Limit: 3}, "catalog deleted")
	_, err = w.Append(ctx, 1, catSnap(t, "s001", 1, rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, err)
	requireCatalogSound(t, fresh, "after the append")
	requireListsAsScan(t, fresh, summary.Query{Limit: 3}, "after the append")
	require.NoError(t, w.Release(ctx))
}
