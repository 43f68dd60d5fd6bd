package jsonlstore

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// retireClock is a store clock tests move by hand.
type retireClock struct{ ns atomic.Int64 }

func newRetireClock() *retireClock {
	c := &retireClock{}
	c.ns.Store(sessiontest.Epoch.UnixNano())
	return c
}

func (c *retireClock) now() time.Time         { return time.Unix(0, c.ns.Load()).UTC() }
func (c *retireClock) add(d time.Duration)    { c.ns.Add(int64(d)) }
func (c *retireClock) opts(o Options) Options { o.Now = c.now; return o }

// retireWords is text-heavy content: prose made of a small vocabulary,
// as agents' transcripts are.
var retireWords = strings.Fields(`the build failed because the test harness could not open the
configuration file so we read the error message again and changed the path in the loader then
ran the suite once more and every package passed except the one that talks to the database
whose migration needs a fresh schema before the integration tests start`)

// retireText is n bytes or so of prose, seeded.
func retireText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(retireWords[r.IntN(len(retireWords))])
		b.WriteByte(' ')
	}
	return b.String()
}

// retireSnapshot is revision rev of session id: rev messages of prose,
// each revision the one before and one more message
// (the one word "zebra<id>" in the first, for searches), with labels.
func retireSnapshot(id session.SessionID, rev int, labels map[string]string, msgBytes int) sessnap.Snapshot {
	s := sessiontest.New(string(id))
	for k, v := range labels {
		if err := s.SetLabel(k, v); err != nil {
			panic(err)
		}
	}
	for i := range rev {
		r := rand.New(rand.NewPCG(uint64(len(id)), uint64(i))) // message i is the same in every revision
		text := retireText(r, msgBytes)
		if i == 0 {
			text = "zebra" + strings.ReplaceAll(string(id), "-", "") + " " + text
		}
		at := sessiontest.Epoch.Add(time.Duration(i) * time.Second)
		if err := s.AppendMessage(session.TextMessage(session.RoleUser, text, at)); err != nil {
			panic(err)
		}
	}
	snap, err := sessnap.Of(s)
	if err != nil {
		panic(err)
	}
	return snap
}

// makeRetireSession creates session id with revs revisions and releases it.
func makeRetireSession(t testing.TB, st *Store, id session.SessionID, revs int, labels map[string]string, msgBytes int) {
	t.Helper()
	ctx := context.Background()
	w, err := st.Create(ctx, retireSnapshot(id, 1, labels, msgBytes), sessionstore.AcquireOptions{Label: "test"})
	require.NoError(t, err)
	for rev := 2; rev <= revs; rev++ {
		_, err := w.Append(ctx, uint64(rev-1), retireSnapshot(id, rev, labels, msgBytes))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
}

// sessionFiles reads every file of session id's directory: name → bytes.
func sessionFiles(t testing.TB, dir string, id session.SessionID) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(dir, string(id))
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	}))
	return out
}

func liveIDs(t testing.TB, st *Store) []session.SessionID {
	t.Helper()
	page, err := st.List(context.Background(), summary.Query{Limit: summary.MaxLimit})
	require.NoError(t, err)
	require.Empty(t, page.Unreadable)
	var ids []session.SessionID
	for _, s := range page.Items {
		ids = append(ids, s.ID)
	}
	return ids
}

func retiredIDs(t testing.TB, st *Store) []session.SessionID {
	t.Helper()
	var ids []session.SessionID
	for rs, err := range st.RetiredSessions(context.Background()) {
		require.NoError(t, err)
		require.False(t, rs.AlsoLive, "%s", rs.ID)
		ids = append(ids, rs.ID)
	}
	return ids
}

// TestRetireRestore retires idle sessions (by age, by label, by name,
// by policy) and restores them: a held session is never retired; the
// listing, the catalog and the live search index no longer see a
// retired session, the retired listing and search do; a restored
// session's files are byte for byte what they were (an archive and
// blobs included), and listings and search see it again; the journal
// records each move; Verify finds the store sound (verifyAtCleanup).
func TestRetireRestore(t *testing.T) {
	ctx := t.Context()
	clock := newRetireClock()
	st := openTestStoreWith(t, clock.opts(withSearch(Options{BlobThreshold: 4096})))
	dir := st.Dir()

	makeRetireSession(t, st, "old-a", 6, map[string]string{"team": "tools"}, 600)
	makeRetireSession(t, st, "old-b", 4, map[string]string{"team": "web"}, 9000) // blobs
	makeRetireSession(t, st, "old-held", 3, nil, 300)
	makeRetireSession(t, st, "old-c", 30, nil, 200)
	_, err := st.Compact(ctx, "old-c", maintenance.CompactPolicy{KeepLast: 3}, 0) // an archive
	require.NoError(t, err)
	clock.add(40 * 24 * time.Hour)
	makeRetireSession(t, st, "new-d", 2, map[string]string{"team": "tools"}, 300)
	holder, err := st.Acquire(ctx, "old-held", sessionstore.AcquireOptions{Label: "agent"})
	require.NoError(t, err)
	defer holder.Release(ctx)

	before := map[session.SessionID]map[string]string{}
	for _, id := range []session.SessionID{"old-a", "old-b", "old-c"} {
		before[id] = sessionFiles(t, dir, id)
	}
	require.Contains(t, before["old-c"], "archive/manifest.json")
	require.Contains(t, fmt.Sprint(before["old-b"]), "blobs/")

	_, err = st.Retire(ctx, maintenance.RetireOptions{})
	require.ErrorIs(t, err, ErrRetireCriteria)

	// A dry run changes nothing.
	rep, err := st.Retire(ctx, maintenance.RetireOptions{OlderThan: 30 * 24 * time.Hour, DryRun: true})
	require.NoError(t, err)
	require.Len(t, rep.Retired, 3)
	require.Equal(t, []maintenance.RetireSkip{{ID: "old-held", Reason: "held by a live holder"}}, rep.Skipped)
	require.Empty(t, retiredIDs(t, st))

	// By label and age: old-a only.
	rep, err = st.Retire(ctx, maintenance.RetireOptions{OlderThan: 30 * 24 * time.Hour, Labels: map[string]string{"team": "tools"}})
	require.NoError(t, err)
	require.Len(t, rep.Retired, 1)
	require.Equal(t, session.SessionID("old-a"), rep.Retired[0].ID)
	require.Less(t, rep.PackBytes, rep.Bytes)

	// By age: the others but the held one.
	rep, err = st.Retire(ctx, maintenance.RetireOptions{OlderThan: 30 * 24 * time.Hour})
	require.NoError(t, err)
	require.Len(t, rep.Retired, 2)
	require.Equal(t, []maintenance.RetireSkip{{ID: "old-held", Reason: "held by a live holder"}}, rep.Skipped)

	require.ElementsMatch(t, []session.SessionID{"old-held", "new-d"}, liveIDs(t, st))
	require.Equal(t, []session.SessionID{"old-a", "old-b", "old-c"}, retiredIDs(t, st))
	cv, err := st.VerifyCatalog(ctx)
	require.NoError(t, err)
	require.Empty(t, cv.Problems, "the catalog after the retires")
	for id := range before {
		_, err := os.Lstat(filepath.Join(dir, string(id)))
		require.ErrorIs(t, err, fs.ErrNotExist)
		_, err = st.Load(ctx, id)
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
	}
	bad, err := st.VerifyRetired(ctx)
	require.NoError(t, err)
	require.Empty(t, bad)

	// The live search does not find them; the retired search does.
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: "zebraolda"})
	require.NoError(t, err)
	require.Empty(t, res.Hits)
	res, err = st.SearchRetired(ctx, sessionstore.SearchQuery{Text: "zebraolda"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	require.Equal(t, session.SessionID("old-a"), res.Hits[0].ID)
	res, err = st.SearchRetired(ctx, sessionstore.SearchQuery{Text: "zebraoldc"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1, "a message only in the archive is found")
	require.Equal(t, uint64(1), res.Hits[0].Revision)

	// Restore: byte for byte.
	rrep, err := st.Restore(ctx, "old-a", "old-b", "old-c")
	require.NoError(t, err)
	require.Len(t, rrep.Restored, 3)
	for id, want := range before {
		require.Equal(t, want, sessionFiles(t, dir, id), "%s restored byte for byte", id)
	}
	require.Empty(t, retiredIDs(t, st))
	require.ElementsMatch(t, []session.SessionID{"old-a", "old-b", "old-c", "old-held", "new-d"}, liveIDs(t, st))
	cv, err = st.VerifyCatalog(ctx)
	require.NoError(t, err)
	require.Empty(t, cv.Problems, "the catalog after the restores")
	res, err = st.Search(ctx, sessionstore.SearchQuery{Text: "zebraolda"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1, "the live search sees it again")
	_, err = st.Restore(ctx, "old-a")
	require.ErrorIs(t, err, ErrNotRetired)

	// A restored session is active from its restore: the same age does
	// not retire it again at once.
	rep, err = st.Retire(ctx, maintenance.RetireOptions{OlderThan: 30 * 24 * time.Hour, IDs: []session.SessionID{"old-a"}})
	require.NoError(t, err)
	require.Empty(t, rep.Retired)

	// The policy file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, retire.PolicyFile),
		[]byte(`{"v":1,"retire":[{"older_than":"1d","labels":{"team":"web"}}],"keep":{"labels":{"pin":"yes"}}}`), 0o600))
	clock.add(2 * 24 * time.Hour)
	rep, err = st.Retire(ctx, maintenance.RetireOptions{Policy: true})
	require.NoError(t, err)
	require.Len(t, rep.Retired, 1)
	require.Equal(t, session.SessionID("old-b"), rep.Retired[0].ID)
	require.Equal(t, "policy rule 1", rep.Retired[0].Reason)
	require.NoError(t, os.WriteFile(filepath.Join(dir, retire.PolicyFile), []byte(`{"v":1,"retire":[{"older_than":"1d","lables":{}}]}`), 0o600))
	_, err = st.Retire(ctx, maintenance.RetireOptions{Policy: true})
	require.ErrorIs(t, err, ErrRetirePolicy)
	require.ErrorContains(t, err, "lables")

	// Only rm deletes a retired session.
	require.NoError(t, st.RemoveRetired(ctx, "old-b"))
	require.Empty(t, retiredIDs(t, st))

	var ops []string
	for ev, err := range retire.Events(st.fs) {
		require.NoError(t, err)
		ops = append(ops, ev.Op+" "+string(ev.ID))
	}
	require.Equal(t, []string{"retire old-a", "retire old-b", "retire old-c", "restore old-a", "restore old-b", "restore old-c",
		"retire old-b", "rm old-b"}, ops)
}
