package jsonlstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The catalog under real processes: writers that create sessions and
// append to them (each its own, its leases held and released as agents
// do), a process that rebuilds the catalog over and over (holding its
// lock most of the time), and a lister that lists every session with a
// fresh store whenever the test asks. A listing must show every session
// whose creation a writer acknowledged before the test asked, at a
// revision no lower than the last one acknowledged; no writer's append may
// fail or wait for the catalog.

const (
	// procModeCatalogWriter: until stdin closes, in a random order: create
	// session PREFIX-N (print "created ID"; 60 at most), or take the lease of one it
	// made, append 1 to 3 revisions (print "rev ID REV" after each) and
	// release it or keep holding it. Then print "done" and exit 0.
	procModeCatalogWriter = "catalog-writer"
	// procModeCatalogRebuilder: rebuild the catalog (Reindex) until stdin
	// closes, then print "rebuilt N" and exit 0.
	procModeCatalogRebuilder = "catalog-rebuilder"
	// procModeCatalogLister: for each line "list LIMIT" on stdin, open a
	// fresh store, page through every session LIMIT at a time, in ID order
	// (an order appends do not change, so that paging meets every session
	// once however they are written meanwhile), and print "listed {ID: REV,
	// …}" (JSON).
	procModeCatalogLister = "catalog-lister"
)

func catalogChild(ctx context.Context, mode string) error {
	seed, err := strconv.ParseUint(os.Getenv(procSeedEnv), 10, 64)
	if err != nil {
		return err
	}
	dir := os.Getenv(procDirEnv)
	r := rand.New(rand.NewPCG(seed, 3))
	stop := make(chan struct{})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(stop)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	switch mode {
	case procModeCatalogWriter:
		st, err := Open(dir, Options{})
		if err != nil {
			return err
		}
		defer st.Close()
		prefix := os.Getenv(procIDEnv)
		var mine []session.SessionID
		held := map[session.SessionID]sessionstore.Writer{}
		defer func() {
			for _, w := range held {
				_ = w.Release(ctx)
			}
		}()
		for !stopped() {
			if len(mine) == 0 || (len(mine) < 60 && r.IntN(4) == 0) {
				id := session.SessionID(fmt.Sprintf("%s-%03d", prefix, len(mine)))
				w, err := st.Create(ctx, catSnap(nopT{}, id, 0, r), sessionstore.AcquireOptions{Label: "writer"})
				if err != nil {
					return fmt.Errorf("create %s: %w", id, err)
				}
				fmt.Printf("created %s\n", id)
				mine = append(mine, id)
				held[id] = w
				continue
			}
			id := mine[r.IntN(len(mine))]
			w, ok := held[id]
			if !ok {
				if w, err = st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "writer"}); err != nil {
					return fmt.Errorf("acquire %s: %w", id, err)
				}
				held[id] = w
			}
			for range 1 + r.IntN(3) {
				rev, err := w.Append(ctx, w.Revision(), catSnap(nopT{}, id, int(w.Revision()), r))
				if err != nil {
					return fmt.Errorf("append to %s: %w", id, err)
				}
				fmt.Printf("rev %s %d\n", id, rev)
			}
			if r.IntN(3) > 0 {
				if err := w.Release(ctx); err != nil {
					return err
				}
				delete(held, id)
			}
		}
		fmt.Println("done")
		return nil
	case procModeCatalogRebuilder:
		st, err := Open(dir, Options{})
		if err != nil {
			return err
		}
		defer st.Close()
		n := 0
		for !stopped() {
			if _, err := st.Reindex(ctx); err != nil {
				return err
			}
			n++
		}
		fmt.Printf("rebuilt %d\n", n)
		return nil
	case procModeCatalogLister:
		for {
			var line string
			select {
			case line = <-lines:
			case <-stop:
				return nil
			}
			limit, err := strconv.Atoi(strings.TrimPrefix(line, "list "))
			if err != nil {
				return fmt.Errorf("bad request %q", line)
			}
			st, err := Open(dir, Options{})
			if err != nil {
				return err
			}
			listed := map[session.SessionID]uint64{}
			q := summary.Query{Limit: limit, Order: summary.OrderIDAsc}
			for {
				page, err := st.List(ctx, q)
				if err != nil {
					_ = st.Close()
					return err
				}
				for _, s := range page.Items {
					if _, dup := listed[s.ID]; dup {
						_ = st.Close()
						return fmt.Errorf("%s listed twice", s.ID)
					}
					listed[s.ID] = s.Revision
				}
				if page.Next == "" {
					break
				}
				q.Cursor = page.Next
			}
			_ = st.Close()
			b, err := json.Marshal(listed)
			if err != nil {
				return err
			}
			fmt.Printf("listed %s\n", b)
		}
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// nopT is a testing.TB for the helpers' snapshots: catSnap fails only on
// inputs it builds itself.
type nopT struct{ testing.TB }

func (nopT) Helper()                   {}
func (nopT) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (nopT) FailNow()                  { panic("catSnap failed") }

// TestCatalogUnderProcesses runs the writers, the rebuilder and the
// lister, and asks for listings (the first pages of 1, 7 and 50, each
// paged to the end) while they work.
func TestCatalogUnderProcesses(t *testing.T) {
	dir := t.TempDir()
	seed := proctest.Seed(t, procSeedOverrideEnv)
	rounds := proctest.EnvInt(t, "JSONLSTORE_CATALOG_PROC_ROUNDS", 30)
	var writers []*proctest.Child
	for i := range 3 {
		writers = append(writers, startProc(t, procModeCatalogWriter, procEnv(dir, session.SessionID(fmt.Sprintf("w%d", i)), seed+uint64(i))...))
	}
	rebuilder := startProc(t, procModeCatalogRebuilder, procEnv(dir, "", seed)...)
	lister := startProc(t, procModeCatalogLister, procEnv(dir, "", seed)...)

	created := map[session.SessionID]bool{}
	acked := map[session.SessionID]uint64{}
	var pending []string // lines read, not yet taken in
	drain := func() {
		for _, w := range writers {
			for {
				line, ok := w.TryNext()
				if !ok {
					break
				}
				pending = append(pending, line)
			}
		}
		for _, line := range pending {
			{
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "created":
					created[session.SessionID(f[1])] = true
					acked[session.SessionID(f[1])] = max(acked[session.SessionID(f[1])], 1)
				case len(f) == 3 && f[0] == "rev":
					rev, err := strconv.ParseUint(f[2], 10, 64)
					require.NoError(t, err)
					acked[session.SessionID(f[1])] = max(acked[session.SessionID(f[1])], rev)
				default:
					t.Fatalf("writer said %q", line)
				}
			}
		}
		pending = pending[:0]
	}
	for round := range rounds {
		// The writers get on with it between listings: a line of each.
		for _, w := range writers {
			pending = append(pending, w.Next(t))
		}
		drain()
		want := map[session.SessionID]uint64{}
		for id := range created {
			want[id] = acked[id]
		}
		limit := []int{1, 7, summary.MaxLimit}[round%3]
		lister.Send(t, fmt.Sprintf("list %d", limit))
		line := lister.Next(t)
		b, ok := strings.CutPrefix(line, "listed ")
		require.True(t, ok, "lister said %q", line)
		var got map[session.SessionID]uint64
		require.NoError(t, json.Unmarshal([]byte(b), &got))
		for id, rev := range want {
			require.Contains(t, got, id, "round %d: %s was created before the listing", round, id)
			require.GreaterOrEqual(t, got[id], rev, "round %d: %s", round, id)
		}
	}
	for _, w := range writers {
		w.CloseStdin()
	}
	for _, w := range writers {
		for {
			line := w.Next(t)
			if line == "done" {
				break
			}
		}
		require.NoError(t, w.Wait(t))
	}
	rebuilder.CloseStdin()
	line := rebuilder.Next(t)
	require.True(t, strings.HasPrefix(line, "rebuilt "), line)
	require.NoError(t, rebuilder.Wait(t))
	lister.CloseStdin()
	require.NoError(t, lister.Wait(t))
	t.Logf("%d sessions created, %s while they were written", len(created), line)

	// At rest, the catalog claims nothing a log contradicts, and lists as a
	// scan does.
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	defer st.Close()
	requireCatalogSound(t, st, "at rest")
	requireListsAsScan(t, st, summary.Query{Limit: 9}, "at rest")
}
