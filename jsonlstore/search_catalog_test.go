package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// searchSession is a session whose conversation is its messages, one
// text message each, built anew for every snapshot.
type searchSession struct {
	id   session.SessionID
	msgs []string
}

func (ss *searchSession) snap(t *testing.T) sessnap.Snapshot {
	t.Helper()
	s := sessiontest.New(string(ss.id))
	for i, m := range ss.msgs {
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		require.NoError(t, s.AppendMessage(session.TextMessage(role, m, sessiontest.Epoch)))
	}
	return sessiontest.Snap(t, s)
}

// TestSearchProvesRowsByTheCatalog: where the catalog can be believed, a
// fresh handle's search takes an unmarked session's row as current on
// the catalog's word, probing only the logs of the sessions its hits come
// from; a session changed under a lease (marked) or created since is
// probed and searched as it is; a hit from a log changed behind the
// catalog's back (restored by hand to an older copy) is caught by its
// probe, and the search proves every row by its log instead.
func TestSearchProvesRowsByTheCatalog(t *testing.T) {
	ctx := context.Background()
	// The store's clock runs ahead of the file system's, so that the root
	// has settled (catalog.Settled) as soon as it stops changing.
	opts := Options{Now: func() time.Time { return time.Now().Add(time.Minute) }}
	st := openTestStoreWith(t, opts)
	const n = 30
	for i := range n {
		ss := &searchSession{id: session.SessionID(fmt.Sprintf("s%02d", i)), msgs: []string{fmt.Sprintf("word%02d opens", i), "common reply"}}
		if i == 7 {
			ss.msgs = append(ss.msgs, "a platypus swims")
		}
		w, err := st.Create(ctx, ss.snap(t), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
	}
	search := func(st *Store, text string) []sessionstore.SearchHit {
		t.Helper()
		res, err := st.Search(ctx, sessionstore.SearchQuery{Text: text})
		require.NoError(t, err)
		return res.Hits
	}
	fresh := func() *Store {
		t.Helper()
		f, err := Open(st.Dir(), withSearch(opts))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	// The first searches bring the index current and, as listings do,
	// write the catalog and its root file.
	require.Len(t, search(st, "platypus"), 1)
	require.Len(t, search(st, "platypus"), 1)
	_, err := os.Stat(filepath.Join(st.Dir(), catalogfile.RootPath))
	require.NoError(t, err, "a search wrote the catalog's root file")

	f := fresh()
	hits := search(f, "platypus")
	require.Len(t, hits, 1)
	require.Equal(t, session.SessionID("s07"), hits[0].ID)
	require.Equal(t, int64(n), indexOf(f).Stats().Vouched, "every row vouched for by the catalog")
	require.Equal(t, int64(1), indexOf(f).Stats().Probes, "one probe: the hit's log")
	require.Zero(t, indexOf(f).Stats().Reproved)

	// Another process appends under a lease: its mark makes the session
	// one the search probes, and the new message is found.
	other := fresh()
	s3 := &searchSession{id: "s03", msgs: []string{"word03 opens", "common reply"}}
	w, err := other.Acquire(ctx, s3.id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	s3.msgs = append(s3.msgs, "a wombat digs")
	_, err = w.Append(ctx, w.Revision(), s3.snap(t))
	require.NoError(t, err)
	probes := indexOf(f).Stats().Probes
	hits = search(f, "wombat")
	require.Len(t, hits, 1, "the marked session's log is probed and read")
	require.Equal(t, s3.id, hits[0].ID)
	require.Equal(t, w.Revision(), hits[0].Revision)
	require.Greater(t, indexOf(f).Stats().Probes, probes)
	require.NoError(t, w.Release(ctx))

	// A session created since: the root changed, and the search reads its
	// names.
	s40 := &searchSession{id: "s40", msgs: []string{"an axolotl smiles"}}
	w, err = other.Create(ctx, s40.snap(t), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	hits = search(f, "axolotl")
	require.Len(t, hits, 1)
	require.Equal(t, s40.id, hits[0].ID)

	// Behind the catalog's back: s07's log as it was before its last
	// append, restored by hand once the catalog accounts for the append.
	s07 := &searchSession{id: "s07", msgs: []string{"word07 opens", "common reply", "a platypus swims"}}
	logFile := filepath.Join(st.Dir(), "s07", LogFile)
	before, err := os.ReadFile(logFile)
	require.NoError(t, err)
	w, err = other.Acquire(ctx, s07.id, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	s07.msgs = append(s07.msgs, "a quokka grins")
	_, err = w.Append(ctx, w.Revision(), s07.snap(t))
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.Len(t, search(st, "quokka"), 1)
	_, err = st.Reindex(ctx) // the catalog rewritten without the mark
	require.NoError(t, err)
	_, err = st.List(ctx, summary.Query{}) // and its root file
	require.NoError(t, err)
	marks, err := st.cat.ReadMarks()
	require.NoError(t, err)
	require.Zero(t, marks.Count(), "the catalog accounts for every session")
	tmp := logFile + ".restore"
	require.NoError(t, os.WriteFile(tmp, before, 0o600))
	require.NoError(t, os.Rename(tmp, logFile))

	g := fresh()
	require.Empty(t, search(g, "quokka"), "the restored log holds no quokka")
	require.Equal(t, int64(1), indexOf(g).Stats().Reproved, "the hit's probe caught the catalog out")
	require.Len(t, search(g, "platypus"), 1)
	h := fresh()
	require.Len(t, search(h, "platypus"), 1)
	require.Equal(t, int64(1), indexOf(h).Stats().Probes, "the catalog, rebuilt, vouches for every row again")
	require.Zero(t, indexOf(h).Stats().Reproved)
}
