package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// searchGrowText is the text of message n of session id's conversation
// as the grow helpers write it.
func searchGrowText(id session.SessionID, seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, uint64(n)^uint64(len(id))<<32))
	w := make([]string, 3+r.IntN(8))
	for i := range w {
		w[i] = searchVocab[r.IntN(len(searchVocab))]
	}
	return strings.Join(w, " ")
}

// searchGrow is the grow helper (procModeGrow).
func searchGrow(ctx context.Context, st *Store, id session.SessionID, seed uint64, stopped func() bool) error {
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "grow"})
	if err != nil {
		return err
	}
	rec, err := st.Load(ctx, id)
	if err != nil {
		return err
	}
	s, err := rec.Session()
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for !stopped() {
		role := session.RoleAssistant
		if s.MessageCount()%2 == 0 {
			role = session.RoleUser
		}
		if err := s.AppendMessage(session.TextMessage(role, searchGrowText(id, seed, s.MessageCount()), sessiontest.Epoch)); err != nil {
			return err
		}
		snap, err := sessnap.Of(s)
		if err != nil {
			return err
		}
		rev, err := w.Append(ctx, w.Revision(), snap)
		if err != nil {
			return err
		}
		fmt.Printf("ack %d\n", rev)
	}
	return w.Release(ctx)
}

// TestSearchAcrossProcesses: processes append at once — growing
// conversations, and holders that take one session from each other, each
// revision replacing its one message — while this process searches. No
// append fails or waits on the index, and afterwards every search answers
// as the histories do, the revisions of the messages included: what other
// processes wrote, and what their queues did not reach the index with,
// is found.
func TestSearchAcrossProcesses(t *testing.T) {
	seed := procSeed(t)
	ctx := t.Context()
	st := openTestStore(t)
	_, err := st.Search(ctx, sessionstore.SearchQuery{Text: "nothing"}) // the index exists
	require.NoError(t, err)
	var grows []session.SessionID
	for i := range 3 {
		id := session.SessionID(fmt.Sprintf("grow-%d", i))
		s := sessiontest.New(string(id))
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, searchGrowText(id, seed, 0), sessiontest.Epoch)))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, w.Release(ctx))
		grows = append(grows, id)
	}
	var children []*proctest.Child
	for _, id := range grows {
		c := startProc(t, procModeGrow, procEnv(st.Dir(), id, seed)...)
		require.Equal(t, "ready", c.Next(t))
		children = append(children, c)
	}
	w, err := procAcquireOrCreate(ctx, st, "shared", seed)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	for range 2 {
		c := startProc(t, procModeHolder, procEnv(st.Dir(), "shared", seed)...)
		children = append(children, c)
	}

	// Search while they append.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var searchErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.Search(ctx, sessionstore.SearchQuery{Text: searchVocab[0]}); err != nil {
				searchErr = err
				return
			}
		}
	})
	for _, c := range children {
		c.WaitAcks(t, 25)
		c.Stop(t) // every append succeeded: the helpers stop at the first error
	}
	close(stop)
	wg.Wait()
	require.NoError(t, searchErr)
	var qs []sessionstore.SearchQuery
	for _, w := range searchVocab {
		qs = append(qs, sessionstore.SearchQuery{Text: w, Limit: sessionstore.MaxSearchLimit})
	}
	qs = append(qs, sessionstore.SearchQuery{Text: `"amber basil"`, Limit: sessionstore.MaxSearchLimit},
		sessionstore.SearchQuery{Text: "ced*", Limit: sessionstore.MaxSearchLimit})
	requireSameAsHistory(t, st, qs, "after the processes")
	// The shared session's one message holds the alphabet's words.
	rec, err := st.Load(ctx, "shared")
	require.NoError(t, err)
	word := strings.Fields(rec.Snapshot.Messages[0].Parts[0].Text)[0]
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: word, Limit: sessionstore.MaxSearchLimit})
	require.NoError(t, err)
	found := false
	for _, h := range res.Hits {
		if h.ID == "shared" {
			found = true
			require.Equal(t, rec.Revision, h.Revision, "the message of the latest revision")
		}
	}
	require.True(t, found, "the shared session's latest message is found")
}
