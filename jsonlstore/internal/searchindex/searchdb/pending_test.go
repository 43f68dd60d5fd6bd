package searchdb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

var pendingVocab = []string{"amber", "basil", "cedar", "dune", "ember", "fjord", "grove", "heron", "iris", "juniper", "amberjack", "cedars"}

// TestSearchPendingAsIfIndexed: a search with pending documents (a
// session's messages after its row's, with a new title, new labels
// filtered on) gives the hits, order and scores that the same search
// gives once the index holds them, whatever the limit (the index's rows
// are read only as far as one can still rank among the hits), with and
// without tools, for words, phrases and prefixes; the index's hits of
// the session carry its title and time as they are now, and the
// replaced documents (its old title, messages the row got meanwhile)
// are not found; the same when the pending documents say which row they
// were read after, and the row moved on serves for what it now holds.
func TestSearchPendingAsIfIndexed(t *testing.T) {
	ctx := t.Context()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 9))
			words := func(k int) string {
				w := make([]string, k)
				for i := range w {
					w[i] = pendingVocab[r.IntN(len(pendingVocab))]
				}
				return strings.Join(w, " ")
			}
			doc := func() fulltext.Doc {
				d := fulltext.Doc{Role: session.RoleAssistant, Text: words(1 + r.IntN(12))}
				if r.IntN(3) == 0 {
					d.Tool = words(1 + r.IntN(20))
				}
				return d
			}
			p := filepath.Join(t.TempDir(), "index.db")
			require.NoError(t, os.WriteFile(p, nil, 0o600))
			db, err := Open(ctx, p, OpenOptions{Create: true})
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			t0 := time.Unix(1700000000, 0).UTC()
			var ups []Update
			for i := range 30 {
				u := Update{ID: session.SessionID(fmt.Sprintf("s%02d", i)), Reset: true, Rev: 2, Title: words(2), TitleRev: 1,
					Updated: t0.Add(time.Duration(i) * time.Second), Project: "/p", Labels: map[string]string{"k": fmt.Sprint(i % 2)}}
				for m := range 1 + r.IntN(8) {
					u.Add = append(u.Add, Message{Index: m, Rev: 1 + uint64(m%2), Doc: doc()})
				}
				u.Messages = len(u.Add)
				for m := range u.Add {
					u.Digest = u.Digest.Add(&u.Add[m].Doc)
				}
				ups = append(ups, u)
			}
			_, err = db.Apply(ctx, ups, NoWait)
			require.NoError(t, err)

			// Session s07 gains messages and a new title; its row already
			// holds the first of them (another process moved it on), which
			// the search must take from the pending documents alone.
			base := ups[7]
			next := base
			next.Reset, next.Rev, next.Title, next.TitleRev, next.Updated = false, 8, words(2), 4, t0.Add(time.Hour)
			next.Add = nil
			for m := range 6 {
				next.Add = append(next.Add, Message{Index: base.Messages + m, Rev: 3 + uint64(m), Doc: doc()})
			}
			next.Messages = base.Messages + len(next.Add)
			moved := next
			moved.Rev, moved.Messages, moved.Add, moved.Title = 3, base.Messages+1, next.Add[:1], base.Title
			moved.FromRev, moved.FromMessages, moved.Updated, moved.Extend = base.Rev, base.Messages, base.Updated, true
			ok, err := db.Apply(ctx, []Update{moved}, NoWait)
			require.NoError(t, err)
			require.Equal(t, []bool{true}, ok)
			pending := Pending{ID: next.ID, Title: next.Title, Updated: next.Updated, Project: next.Project, Labels: next.Labels,
				From: base.Messages, TitleChanged: true,
				Docs: append([]Message{{Index: -1, Rev: next.TitleRev, Doc: fulltext.Doc{Text: next.Title}}}, next.Add...)}
			// The same, saying which row it was read after: the row moved
			// on serves for the message it now holds (rebase).
			rebased := pending
			rebased.FromRev, rebased.FromDigest, rebased.Rev = base.Rev, base.Digest, next.Rev
			st, err := db.StatesOf(ctx, []session.SessionID{next.ID})
			require.NoError(t, err)
			now := st[next.ID]
			require.Equal(t, base.Messages+1, rebased.rebase(now.Rev, now.Messages, now.Digest), "the moved row serves for its new message")
			require.Equal(t, base.Messages, pending.rebase(now.Rev, now.Messages, now.Digest), "no rebase without the row read after")
			wrong := rebased
			wrong.FromDigest[0] ^= 1
			require.Equal(t, base.Messages, wrong.rebase(now.Rev, now.Messages, now.Digest), "a row of other messages does not serve")

			type query struct {
				text    string
				noTools bool
				labels  map[string]string
				limit   int
			}
			var qs []query
			for range 30 {
				q := query{noTools: r.IntN(3) == 0, limit: []int{1, 3, 10, 0}[r.IntN(4)]}
				switch r.IntN(4) {
				case 0:
					q.text = pendingVocab[r.IntN(len(pendingVocab))][:3] + "*"
				case 1:
					q.text = `"` + words(2) + `"`
				case 2:
					q.text = words(2)
				default:
					q.text = pendingVocab[r.IntN(len(pendingVocab))]
				}
				if r.IntN(4) == 0 {
					q.labels = map[string]string{"k": "1"}
				}
				qs = append(qs, q)
			}
			search := func(q query, pend []Pending) []fulltext.Hit {
				fq, err := fulltext.Parse(q.text)
				require.NoError(t, err)
				hits, err := db.Search(ctx, fq, Filter{NoTools: q.noTools, Labels: q.labels, Pending: pend}, q.limit)
				require.NoError(t, err)
				return hits
			}
			beside := make([][]fulltext.Hit, 2*len(qs))
			for i, q := range qs {
				beside[i] = search(q, []Pending{pending})
				beside[len(qs)+i] = search(q, []Pending{rebased})
			}
			next.FromRev, next.FromMessages, next.Add = moved.Rev, moved.Messages, next.Add[1:]
			ok, err = db.Apply(ctx, []Update{next}, NoWait)
			require.NoError(t, err)
			require.Equal(t, []bool{true}, ok)
			for i := range beside {
				q := qs[i%len(qs)]
				want := search(q, nil)
				got := beside[i]
				require.Len(t, got, len(want), "%+v", q)
				for j := range want {
					w, g := want[j], got[j]
					require.Equal(t, [5]any{w.ID, w.Message, w.Field, w.Revision, w.Title}, [5]any{g.ID, g.Message, g.Field, g.Revision, g.Title}, "%+v: hit %d", q, j)
					require.True(t, w.Updated.Equal(g.Updated), "%+v: hit %d", q, j)
					require.InDelta(t, 0, (w.Score-g.Score)/math.Max(math.Abs(w.Score), 1e-9), 1e-9, "%+v: hit %d: %v, beside the index %v", q, j, w.Score, g.Score)
				}
			}
		})
	}
}

// TestVarints: SQLite's varints, as FTS5's averages record holds them.
func TestVarints(t *testing.T) {
	got, ok := varints([]byte{0x05, 0x81, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 3)
	require.True(t, ok)
	require.Equal(t, []uint64{5, 128, math.MaxUint64}, got)
	_, ok = varints([]byte{0x81}, 1)
	require.False(t, ok, "cut short")
	_, ok = varints([]byte{0x01}, 2)
	require.False(t, ok, "too few")
}
