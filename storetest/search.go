package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/searchtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// searcher is a session being built for the search checks: its writer
// and the session, which grows by the messages the check appends.
type searcher struct {
	f *fixture
	w sessionstore.Writer
	s *session.Session
}

// newSearcher creates session id titled title with a first user prompt.
func (f *fixture) newSearcher(id, title, prompt string, edit func(*session.Config)) *searcher {
	f.t.Helper()
	cfg := sessiontest.Config(id)
	if edit != nil {
		edit(&cfg)
	}
	s, err := session.New(cfg)
	require.NoError(f.t, err)
	if title != "" {
		require.NoError(f.t, s.SetTitle(title, session.TitleExplicit))
	}
	require.NoError(f.t, s.AppendMessage(session.TextMessage(session.RoleUser, prompt, sessiontest.Epoch)))
	return &searcher{f: f, w: f.createSnap(sessiontest.Snap(f.t, s)), s: s}
}

// add appends msgs to the conversation in one revision and returns it.
func (sr *searcher) add(msgs ...session.Message) uint64 {
	sr.f.t.Helper()
	for _, m := range msgs {
		require.NoError(sr.f.t, sr.s.AppendMessage(m))
	}
	return sr.f.append(sr.w, sr.w.Revision(), sessiontest.Snap(sr.f.t, sr.s))
}

func reply(text string) session.Message {
	return session.TextMessage(session.RoleAssistant, text, sessiontest.Epoch.Add(time.Second))
}

func toolCall(id, name, input string) session.Message {
	return session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: id, Name: name, Input: json.RawMessage(input)},
	}}
}

func toolResult(id, output string) session.Message {
	return session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: id, Output: output},
	}}
}

// search runs q and returns its result.
func (f *fixture) search(q sessionstore.SearchQuery) sessionstore.SearchResult {
	f.t.Helper()
	if q.Limit == 0 {
		q.Limit = sessionstore.MaxSearchLimit
	}
	res, err := f.s.Search(f.ctx, q)
	require.NoError(f.t, err, "Search %q", q.Text)
	for _, h := range res.Hits {
		checkMarks(f, q.Text, h)
	}
	return res
}

// hitKey names a hit: session, field, message, revision.
type hitKey struct {
	ID       session.SessionID
	Field    string
	Message  int
	Role     session.Role
	Revision uint64
}

func (k hitKey) String() string {
	return fmt.Sprintf("%s/%s/%d/%s@%d", k.ID, k.Field, k.Message, k.Role, k.Revision)
}

func keysOf(hits []sessionstore.SearchHit) []hitKey {
	out := make([]hitKey, len(hits))
	for i, h := range hits {
		out[i] = hitKey{h.ID, h.Field, h.Message, h.Role, h.Revision}
	}
	return out
}

func sortedKeys(hits []sessionstore.SearchHit) []hitKey {
	k := keysOf(hits)
	slices.SortFunc(k, func(a, b hitKey) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Message, b.Message), cmp.Compare(a.Field, b.Field))
	})
	return k
}

// checkMarks checks that a hit's snippet marks lie in it and that each
// marked piece holds a word of the query (a prefix of one, for prefixes).
func checkMarks(f *fixture, query string, h sessionstore.SearchHit) {
	f.t.Helper()
	require.NotEmpty(f.t, h.Marks, "hit %s %q has no marks", h.ID, h.Snippet)
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return r == ' ' || r == '"' || r == '*' || r == '-' || r == '.' })
	for _, m := range h.Marks {
		require.True(f.t, 0 <= m.Start && m.Start < m.End && m.End <= len(h.Snippet), "mark %v outside snippet %q", m, h.Snippet)
		marked := strings.ToLower(h.Snippet[m.Start:m.End])
		require.True(f.t, slices.ContainsFunc(words, func(w string) bool { return strings.Contains(marked, w) }),
			"mark %q of snippet %q holds no word of %q", marked, h.Snippet, query)
	}
}

// checkSearchFields: words of a title, a prompt, a reply, a tool call and
// a tool result are found where they are, with the message, its role and
// the revision it appeared at.
func checkSearchFields(f *fixture) {
	t := f.t
	sr := f.newSearcher("s-fields", "Quartz migration plan", "Please migrate the flamingo service", nil)
	r2 := sr.add(reply("The pelican handler is done."))
	r3 := sr.add(toolCall("c1", "run_shell", `{"cmd":"grep heron ."}`), toolResult("c1", "ostrich.go:12: func main()"))
	f.create("s-other") // holds none of the words

	tests := []struct {
		query string
		want  hitKey
	}{
		{"quartz", hitKey{"s-fields", "title", -1, "", 1}},
		{"flamingo", hitKey{"s-fields", "text", 0, session.RoleUser, 1}},
		{"PELICAN", hitKey{"s-fields", "text", 1, session.RoleAssistant, r2}},
		{"heron", hitKey{"s-fields", "tool", 2, session.RoleAssistant, r3}},
		{"ostrich", hitKey{"s-fields", "tool", 3, session.RoleTool, r3}},
	}
	for _, tt := range tests {
		res := f.search(sessionstore.SearchQuery{Text: tt.query})
		require.Equal(t, []hitKey{tt.want}, keysOf(res.Hits), "search %q", tt.query)
		h := res.Hits[0]
		require.Equal(t, "Quartz migration plan", h.Title)
		require.Contains(t, strings.ToLower(h.Snippet), strings.ToLower(tt.query))
		require.Equal(t, strings.ToLower(tt.query), strings.ToLower(h.Snippet[h.Marks[0].Start:h.Marks[0].End]))
	}
	require.Empty(t, f.search(sessionstore.SearchQuery{Text: "albatross"}).Hits)

	// A new title is found, the old one no longer.
	require.NoError(t, sr.s.SetTitle("Basalt rollout", session.TitleExplicit))
	r4 := sr.add()
	require.Empty(t, f.search(sessionstore.SearchQuery{Text: "quartz"}).Hits)
	require.Equal(t, []hitKey{{"s-fields", "title", -1, "", r4}}, keysOf(f.search(sessionstore.SearchQuery{Text: "basalt"}).Hits))
}

// checkSearchPhrases: phrases match words in order, prefixes match words
// they begin, and every term must be in one message.
func checkSearchPhrases(f *fixture) {
	t := f.t
	sr := f.newSearcher("s-phrase", "", "the quick brown fox jumps over the lazy dog", nil)
	sr.add(reply("zebra crossing"), reply("config.yaml loaded; exit-status 3"))
	msg0 := []hitKey{{"s-phrase", "text", 0, session.RoleUser, 1}}
	tests := []struct {
		query string
		want  []hitKey
	}{
		{`"quick brown"`, msg0},
		{`"QUICK   brown fox"`, msg0},
		{`"brown quick"`, nil},
		{`"quick fox"`, nil},
		{`quic*`, msg0},
		{`"quick bro*"`, msg0},
		{`"quick bro"`, nil},
		{`bro`, nil},
		{`lazy quick`, msg0},
		{`quick zebra`, nil}, // in two messages, not one
		{`zeb* cross*`, []hitKey{{"s-phrase", "text", 1, session.RoleAssistant, 2}}},
		{`config.yaml`, []hitKey{{"s-phrase", "text", 2, session.RoleAssistant, 2}}},
		{`exit-status`, []hitKey{{"s-phrase", "text", 2, session.RoleAssistant, 2}}},
		{`"yaml loaded"`, []hitKey{{"s-phrase", "text", 2, session.RoleAssistant, 2}}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, nilIfEmpty(sortedKeys(f.search(sessionstore.SearchQuery{Text: tt.query}).Hits)), "search %s", tt.query)
	}
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// checkSearchNoTools: NoTools leaves tool calls and results out, and
// nothing else.
func checkSearchNoTools(f *fixture) {
	t := f.t
	sr := f.newSearcher("s-tools", "", "find the walrus", nil)
	sr.add(toolCall("c1", "grep", `{"pattern":"walrus"}`), toolResult("c1", "walrus.txt: narwhal"))
	all := f.search(sessionstore.SearchQuery{Text: "walrus"})
	require.Len(t, all.Hits, 3, "the prompt, the call and the result: %v", keysOf(all.Hits))
	res := f.search(sessionstore.SearchQuery{Text: "walrus", NoTools: true})
	require.Equal(t, []hitKey{{"s-tools", "text", 0, session.RoleUser, 1}}, keysOf(res.Hits))
	require.Empty(t, f.search(sessionstore.SearchQuery{Text: "narwhal", NoTools: true}).Hits)
	require.Len(t, f.search(sessionstore.SearchQuery{Text: "narwhal"}).Hits, 1)
}

// checkSearchDelete: a deleted session has no hits, and an ID created
// again has only the new session's.
func checkSearchDelete(f *fixture) {
	t := f.t
	sr := f.newSearcher("s-gone", "Gone session", "the cormorant nests", nil)
	sr.add(reply("cormorant facts"))
	f.newSearcher("s-stays", "", "a cormorant too", nil)
	require.Len(t, f.search(sessionstore.SearchQuery{Text: "cormorant"}).Hits, 3)
	require.NoError(t, sr.w.Delete(f.ctx))
	res := f.search(sessionstore.SearchQuery{Text: "cormorant"})
	require.Equal(t, []hitKey{{"s-stays", "text", 0, session.RoleUser, 1}}, keysOf(res.Hits))
	require.Empty(t, f.search(sessionstore.SearchQuery{Text: "gone"}).Hits)
	f.newSearcher("s-gone", "", "a puffin now", nil)
	require.Equal(t, []hitKey{{"s-stays", "text", 0, session.RoleUser, 1}}, keysOf(f.search(sessionstore.SearchQuery{Text: "cormorant"}).Hits))
	require.Equal(t, []hitKey{{"s-gone", "text", 0, session.RoleUser, 1}}, keysOf(f.search(sessionstore.SearchQuery{Text: "puffin"}).Hits))
}

// checkSearchOtherHandle: sessions created, appended and deleted through
// another handle on the same store (another process's, where the adapter
// has one) are found as they are now.
func checkSearchOtherHandle(f *fixture) {
	t := f.t
	f.newSearcher("s-mine", "", "a kestrel here", nil)
	require.Len(t, f.search(sessionstore.SearchQuery{Text: "kestrel"}).Hits, 1) // the index is in use
	other := f.other()
	o := &fixture{t: t, h: f.h, s: other, ctx: f.ctx, closed: true}
	sr := o.newSearcher("s-theirs", "", "their kestrel", nil)
	r2 := sr.add(reply("and a merlin"))
	require.Equal(t, []hitKey{{"s-mine", "text", 0, session.RoleUser, 1}, {"s-theirs", "text", 0, session.RoleUser, 1}},
		sortedKeys(f.search(sessionstore.SearchQuery{Text: "kestrel"}).Hits))
	require.Equal(t, []hitKey{{"s-theirs", "text", 1, session.RoleAssistant, r2}}, keysOf(f.search(sessionstore.SearchQuery{Text: "merlin"}).Hits))
	r3 := sr.add(reply("the merlin again"))
	require.Equal(t, []hitKey{{"s-theirs", "text", 1, session.RoleAssistant, r2}, {"s-theirs", "text", 2, session.RoleAssistant, r3}},
		sortedKeys(f.search(sessionstore.SearchQuery{Text: "merlin"}).Hits))
	require.NoError(t, sr.w.Delete(f.ctx))
	require.Empty(t, f.search(sessionstore.SearchQuery{Text: "merlin"}).Hits)
}

// other returns another handle on the fixture's store (Harness.Open), or
// the store itself.
func (f *fixture) other() sessionstore.Store {
	f.t.Helper()
	if f.h.Open == nil {
		return f.s
	}
	o := f.h.Open(f.t, f.s)
	require.NotNil(f.t, o)
	return o
}

// checkSearchFilters: labels and project select the sessions searched,
// as they select a listing's, following the latest revision.
func checkSearchFilters(f *fixture) {
	t := f.t
	mk := func(id string, labels map[string]string, project string) *searcher {
		return f.newSearcher(id, "", "the gannet report", func(c *session.Config) {
			c.Labels = labels
			c.Workspace = session.Workspace{Project: project, Dir: project}
		})
	}
	mk("f-a", map[string]string{"team": "a", "env": "dev"}, "/src/app")
	mk("f-b", map[string]string{"team": "b"}, "/src/app/")
	mk("f-sub", map[string]string{"team": "a"}, "/src/app/tools")
	mk("f-sib", nil, "/src/apps")
	relabel := mk("f-re", map[string]string{"team": "a"}, "/src/lib")
	require.NoError(t, relabel.s.SetLabel("team", "c"))
	relabel.add()
	ids := func(q sessionstore.SearchQuery) []string {
		var out []string
		for _, h := range f.search(q).Hits {
			out = append(out, string(h.ID))
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		q    sessionstore.SearchQuery
		want []string
	}{
		{"none", sessionstore.SearchQuery{}, []string{"f-a", "f-b", "f-re", "f-sib", "f-sub"}},
		{"one label", sessionstore.SearchQuery{Labels: map[string]string{"team": "a"}}, []string{"f-a", "f-sub"}},
		{"labels ANDed", sessionstore.SearchQuery{Labels: map[string]string{"team": "a", "env": "dev"}}, []string{"f-a"}},
		{"relabelled", sessionstore.SearchQuery{Labels: map[string]string{"team": "c"}}, []string{"f-re"}},
		{"project", sessionstore.SearchQuery{Project: "/src/app"}, []string{"f-a", "f-b"}},
		{"project tree", sessionstore.SearchQuery{Project: "/src/app/", ProjectTree: true}, []string{"f-a", "f-b", "f-sub"}},
		{"both", sessionstore.SearchQuery{Project: "/src/app", ProjectTree: true, Labels: map[string]string{"team": "a"}}, []string{"f-a", "f-sub"}},
	}
	for _, tt := range tests {
		tt.q.Text = "gannet"
		require.Equal(t, tt.want, ids(tt.q), tt.name)
	}
}

// checkSearchRanking: a short message that is about the word ranks above
// a long one that mentions it once, and Limit keeps the best.
func checkSearchRanking(f *fixture) {
	t := f.t
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 60)
	f.newSearcher("r-long", "", filler+"osprey "+filler, nil)
	f.newSearcher("r-short", "", "osprey osprey: the osprey", nil)
	for i := range 5 {
		f.newSearcher(fmt.Sprintf("r-mid-%d", i), "", "an osprey, "+filler[:200], nil)
	}
	res := f.search(sessionstore.SearchQuery{Text: "osprey"})
	require.Len(t, res.Hits, 7)
	require.Equal(t, session.SessionID("r-short"), res.Hits[0].ID, "best first: %v", keysOf(res.Hits))
	require.Equal(t, session.SessionID("r-long"), res.Hits[6].ID, "worst last: %v", keysOf(res.Hits))
	for i := 1; i < len(res.Hits); i++ {
		require.GreaterOrEqual(t, res.Hits[i-1].Score, res.Hits[i].Score, "hits in score order")
	}
	top, err := f.s.Search(f.ctx, sessionstore.SearchQuery{Text: "osprey", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, keysOf(res.Hits[:2]), keysOf(top.Hits))
	def, err := f.s.Search(f.ctx, sessionstore.SearchQuery{Text: "lorem"})
	require.NoError(t, err)
	require.Len(t, def.Hits, 6, "every session but r-short holds lorem")
}

// checkSearchBadQuery: a query without a word, or out of bounds, is
// ErrBadQuery.
func checkSearchBadQuery(f *fixture) {
	f.create("s-any")
	for _, q := range []sessionstore.SearchQuery{
		{Text: ""}, {Text: `  "" * -- `}, {Text: "ok", Limit: -1},
		{Text: "ok", Labels: map[string]string{"Bad Key": "v"}},
		{Text: strings.Repeat("w ", 5000)},
	} {
		_, err := f.s.Search(f.ctx, q)
		require.ErrorIs(f.t, err, sessionstore.ErrBadQuery, "query %+v", q)
	}
}

// checkSearchSeeds: over many seeds, sessions grow by random messages of
// a small vocabulary (several at a time, titles and labels changing, one
// deleted), and every query of random words, phrases and prefixes finds
// in the store's index exactly the hits — message, role, field and the
// revision it appeared at — that reading the histories finds.
func checkSearchSeeds(f *fixture) {
	t := f.t
	vocab := []string{"alpha", "beta", "gamma", "delta", "alpine", "betamax", "gammon", "omega", "alphabet", "deltas"}
	found := 0
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 99))
		words := func(n int) string {
			w := make([]string, n)
			for i := range w {
				w[i] = vocab[r.IntN(len(vocab))]
			}
			return strings.Join(w, " ")
		}
		var live []*searcher
		for i := range 3 + r.IntN(3) {
			sr := f.newSearcher(fmt.Sprintf("seed%d-%d", seed, i), words(2), words(1+r.IntN(8)), func(c *session.Config) {
				c.Labels = map[string]string{"seed": fmt.Sprint(seed)}
			})
			live = append(live, sr)
		}
		for range 4 + r.IntN(8) {
			sr := live[r.IntN(len(live))]
			var msgs []session.Message
			for range r.IntN(3) {
				switch r.IntN(3) {
				case 0:
					msgs = append(msgs, reply(words(1+r.IntN(12))))
				case 1:
					id := fmt.Sprintf("c%d", r.Uint32())
					msgs = append(msgs, toolCall(id, "run", fmt.Sprintf(`{"q":%q}`, words(2))), toolResult(id, words(1+r.IntN(6))))
				default:
					msgs = append(msgs, session.TextMessage(session.RoleUser, words(1+r.IntN(5)), sessiontest.Epoch))
				}
			}
			if r.IntN(4) == 0 {
				require.NoError(t, sr.s.SetTitle(words(2), session.TitleGenerated))
			}
			sr.add(msgs...)
		}
		if r.IntN(2) == 0 {
			require.NoError(t, live[0].w.Delete(f.ctx))
		}
		for range 8 {
			var q string
			switch r.IntN(4) {
			case 0:
				q = vocab[r.IntN(len(vocab))]
			case 1:
				q = `"` + words(2) + `"`
			case 2:
				q = vocab[r.IntN(len(vocab))][:3] + "*"
			default:
				q = words(2)
			}
			sq := sessionstore.SearchQuery{Text: q, Labels: map[string]string{"seed": fmt.Sprint(seed)}, NoTools: r.IntN(3) == 0, Limit: sessionstore.MaxSearchLimit}
			want, err := searchtest.Reference(f.ctx, f.s, sq)
			require.NoError(t, err)
			got := f.search(sq)
			require.Equal(t, sortedKeys(want.Hits), sortedKeys(got.Hits), "seed %d: search %s (no tools %v)", seed, q, sq.NoTools)
			found += len(got.Hits)
		}
	}
	require.Greater(t, found, 100, "the queries found little: the check compares next to nothing")
}
