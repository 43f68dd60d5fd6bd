package summary_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

func withLabels(kv ...string) func(*summary.Summary) {
	return func(s *summary.Summary) {
		s.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withProject(p string) func(*summary.Summary) {
	return func(s *summary.Summary) { s.Project, s.Dir = p, p }
}

func labelFixture() *summary.Index {
	ix := summary.NewIndex()
	ix.Put(sum("app-a", 1, withLabels("team", "a", "env", "dev"), withProject("/src/app")))
	ix.Put(sum("app-b", 2, withLabels("team", "b", "env", "dev"), withProject("/src/app/")))
	ix.Put(sum("lib", 3, withLabels("team", "a", "pinned", ""), withProject("/src/lib")))
	ix.Put(sum("app-tools", 4, withLabels("team", "a"), withProject("/src/app/tools")))
	ix.Put(sum("apps", 5, withProject("/src/apps")))
	ix.Put(sum("bare", 6))
	ix.Put(sum("rooted", 7, withProject("/")))
	return ix
}

func TestIndexQueryLabelsAndProject(t *testing.T) {
	tests := []struct {
		name string
		q    summary.Query
		want []string // in OrderIDAsc
	}{
		{"label", summary.Query{Labels: map[string]string{"team": "a"}}, []string{"app-a", "app-tools", "lib"}},
		{"labels ANDed", summary.Query{Labels: map[string]string{"team": "a", "env": "dev"}}, []string{"app-a"}},
		{"value must match", summary.Query{Labels: map[string]string{"team": "c"}}, nil},
		{"empty value is a tag, not a wildcard", summary.Query{Labels: map[string]string{"pinned": ""}}, []string{"lib"}},
		{"empty value does not match a set value", summary.Query{Labels: map[string]string{"team": ""}}, nil},
		{"empty labels map filters nothing", summary.Query{Labels: map[string]string{}}, []string{"app-a", "app-b", "app-tools", "apps", "bare", "lib", "rooted"}},
		{"project exact, trailing slashes trimmed", summary.Query{Project: "/src/app"}, []string{"app-a", "app-b"}},
		{"project with a trailing slash", summary.Query{Project: "/src/app//"}, []string{"app-a", "app-b"}},
		{"project tree", summary.Query{Project: "/src/app", ProjectTree: true}, []string{"app-a", "app-b", "app-tools"}},
		{"project tree is not a string prefix", summary.Query{Project: "/src/ap", ProjectTree: true}, nil},
		{"root exact", summary.Query{Project: "/"}, []string{"rooted"}},
		{"root tree", summary.Query{Project: "/", ProjectTree: true}, []string{"app-a", "app-b", "app-tools", "apps", "lib", "rooted"}},
		{"project and labels", summary.Query{Project: "/src", ProjectTree: true, Labels: map[string]string{"team": "a"}}, []string{"app-a", "app-tools", "lib"}},
		{"with another filter", summary.Query{Labels: map[string]string{"team": "a"}, UpdatedSince: t0.Add(3 * time.Second)}, []string{"app-tools", "lib"}},
	}
	ix := labelFixture()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.Order = summary.OrderIDAsc
			p, err := ix.Query(q)
			require.NoError(t, err)
			if tt.want == nil {
				require.Empty(t, p.Items)
			} else {
				require.Equal(t, tt.want, ids(p.Items))
			}
			// Paged one at a time through cursors, the same items.
			q.Limit = 1
			got := queryAll(t, ix, q)
			require.Equal(t, len(p.Items), len(got))
			for i := range got {
				require.Equal(t, p.Items[i].ID, got[i].ID)
			}
		})
	}
}

func TestIndexQueryLabelsInvalid(t *testing.T) {
	many := map[string]string{}
	for i := range session.MaxLabels + 1 {
		many[string(rune('a'+i%26))+string(rune('a'+i/26))] = ""
	}
	for _, q := range []summary.Query{
		{Labels: map[string]string{"Team": "a"}},
		{Labels: map[string]string{"team": "a\x00"}},
		{Labels: many},
		{ProjectTree: true},
		{Project: string(make([]byte, session.MaxPathBytes+1))},
	} {
		_, err := labelFixture().Query(q)
		require.Error(t, err, "%+v", q.Labels)
	}
}

// TestCursorBoundToLabelsAndProject: a cursor is refused by a query with
// other labels or another project, and one issued before labels and
// projects existed (its fingerprint built from the four original filters)
// still resumes a query that sets neither.
func TestCursorBoundToLabelsAndProject(t *testing.T) {
	ix := labelFixture()
	q := summary.Query{Labels: map[string]string{"team": "a"}, Order: summary.OrderIDAsc, Limit: 1}
	p, err := ix.Query(q)
	require.NoError(t, err)
	for _, other := range []summary.Query{
		{Labels: map[string]string{"team": "b"}},
		{Labels: map[string]string{"team": "a", "env": "dev"}},
		{Labels: map[string]string{"team": "a"}, Project: "/src"},
		{Labels: map[string]string{"team": "a"}, Project: "/src", ProjectTree: true},
		{},
	} {
		other.Order, other.Limit, other.Cursor = q.Order, q.Limit, p.Next
		_, err := ix.Query(other)
		require.ErrorIs(t, err, summary.ErrBadCursor, "%+v", other)
	}

	states := []session.State{session.StateIdle}
	old, _ := json.Marshal(struct {
		S []session.State
		K []session.SessionKind
		P session.SessionID
		U time.Time
	}{states, nil, "", time.Time{}})
	cursor, _ := json.Marshal(map[string]any{
		"o": summary.OrderIDAsc, "f": base64.RawURLEncoding.EncodeToString(old), "k": summary.Key{ID: "app-b"},
	})
	resumed, err := ix.Query(summary.Query{States: states, Order: summary.OrderIDAsc, Cursor: base64.RawURLEncoding.EncodeToString(cursor)})
	require.NoError(t, err, "a cursor of the first release resumes")
	require.Equal(t, []string{"app-tools", "apps", "bare", "lib", "rooted"}, ids(resumed.Items))
}

func TestProjectLabelsAndWorkspace(t *testing.T) {
	cfg := sessiontest.Config("p")
	cfg.Labels = map[string]string{"team": "a"}
	cfg.Workspace = session.Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "main"}
	s, err := session.New(cfg)
	require.NoError(t, err)
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	got := summary.Project(&snap, 1, 1, sessiontest.Epoch)
	require.Equal(t, map[string]string{"team": "a"}, got.Labels)
	require.Equal(t, "/src/app", got.Project)
	require.Equal(t, "/src/app/cmd", got.Dir)
	require.Equal(t, "main", got.Branch)
	snap.Labels["team"] = "changed after projecting"
	require.Equal(t, "a", got.Labels["team"], "the summary shares no memory with the snapshot")

	ix := summary.NewIndex()
	ix.Put(got)
	got.Labels["team"] = "changed after Put"
	stored, _ := ix.Get("p")
	require.Equal(t, "a", stored.Labels["team"])
	stored.Labels["team"] = "changed after Get"
	again, _ := ix.Get("p")
	require.Equal(t, "a", again.Labels["team"])
}
