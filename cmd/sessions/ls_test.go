package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// projectsStore builds a store of sessions with labels and projects: two
// in the repository repo (one of them started in a subdirectory of it),
// one in another directory, one with neither. It returns the store's root
// and the repository's directory, which holds a .git directory.
func projectsStore(t *testing.T) (root, repo string) {
	t.Helper()
	root, base := t.TempDir(), t.TempDir()
	repo, other := filepath.Join(base, "repo"), filepath.Join(base, "notes")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o700))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "cmd", "tool"), 0o700))
	require.NoError(t, os.MkdirAll(other, 0o700))
	st, err := jsonlstore.Open(root, jsonlstore.Options{Now: goldenClock()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, c := range []struct {
		id        string
		labels    map[string]string
		workspace session.Workspace
	}{
		{"p1-parser", map[string]string{"team": "infra", "prio": "high"}, session.Workspace{Project: repo, Dir: repo, Branch: "main"}},
		{"p2-tool", map[string]string{"team": "infra"}, session.Workspace{Project: repo, Dir: filepath.Join(repo, "cmd", "tool"), Branch: "tool"}},
		{"p3-notes", map[string]string{"team": "docs", "prio": "high"}, session.Workspace{Project: other, Dir: other}},
		{"p4-bare", nil, session.Workspace{}},
	} {
		cfg := sessiontest.Config(c.id)
		cfg.Labels, cfg.Workspace = c.labels, c.workspace
		s, err := session.New(cfg)
		require.NoError(t, err)
		writeSession(t, st, s, 0)
	}
	return root, repo
}

// TestLsLabelsProject: ls --label (ANDed), --project and --here select
// through the query's filters; watch takes the same flags.
func TestLsLabelsProject(t *testing.T) {
	root, repo := projectsStore(t)
	other := filepath.Join(filepath.Dir(repo), "notes")
	elsewhere := t.TempDir()
	bin := filepath.Join(binDir, "sessions")
	ids := func(t *testing.T, dir string, args ...string) []string {
		t.Helper()
		r := clitest.RunIn(t, dir, bin, nil, append([]string{"ls", "--dir", root, "--json", "--order", "id_asc"}, args...)...)
		require.Equal(t, exitOK, r.Code, r.String())
		var page summary.Page
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &page))
		out := []string{}
		for _, s := range page.Items {
			out = append(out, string(s.ID))
		}
		return out
	}
	for _, c := range []struct {
		name string
		dir  string // the working directory ("": the test's)
		args []string
		want []string
	}{
		{name: "everything", want: []string{"p1-parser", "p2-tool", "p3-notes", "p4-bare"}},
		{name: "label", args: []string{"--label", "team=infra"}, want: []string{"p1-parser", "p2-tool"}},
		{name: "labels ANDed", args: []string{"--label", "team=infra", "--label", "prio=high"}, want: []string{"p1-parser"}},
		{name: "label repeated", args: []string{"--label", "prio=high", "--label", "prio=high"}, want: []string{"p1-parser", "p3-notes"}},
		{name: "label value differs", args: []string{"--label", "team=Infra"}, want: []string{}},
		{name: "project", args: []string{"--project", repo}, want: []string{"p1-parser", "p2-tool"}},
		{name: "project cleaned", args: []string{"--project", repo + "/cmd/../"}, want: []string{"p1-parser", "p2-tool"}},
		{name: "project relative", dir: filepath.Dir(repo), args: []string{"--project", "notes"}, want: []string{"p3-notes"}},
		{name: "project is not its subdirectory", args: []string{"--project", filepath.Join(repo, "cmd", "tool")}, want: []string{}},
		{name: "project and label", args: []string{"--project", other, "--label", "prio=high"}, want: []string{"p3-notes"}},
		{name: "here at the top", dir: repo, args: []string{"--here"}, want: []string{"p1-parser", "p2-tool"}},
		{name: "here below the top", dir: filepath.Join(repo, "cmd", "tool"), args: []string{"--here"}, want: []string{"p1-parser", "p2-tool"}},
		{name: "here without git", dir: other, args: []string{"--here"}, want: []string{"p3-notes"}},
		{name: "here with label", dir: repo, args: []string{"--here", "--label", "prio=high"}, want: []string{"p1-parser"}},
		{name: "here elsewhere", dir: elsewhere, args: []string{"--here"}, want: []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, ids(t, c.dir, c.args...))
		})
	}

	// A git worktree's .git is a file.
	wt := filepath.Join(elsewhere, "wt")
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+repo+"/.git/worktrees/wt\n"), 0o600))
	got, err := cli.ProjectOf(filepath.Join(wt, "sub"))
	require.NoError(t, err)
	require.Equal(t, wt, got)

	// The table says when a filter matches nothing.
	r := sessions(t, nil, "ls", "--dir", root, "--label", "team=nobody")
	require.Equal(t, "no sessions match\n", r.Stdout, r.String())
	r = clitest.RunIn(t, elsewhere, bin, nil, "ls", "--dir", root, "--here")
	require.Equal(t, "no sessions match\n", r.Stdout, r.String())

	// Usage errors, for ls and watch alike.
	for _, args := range [][]string{
		{"--label", "team"},                               // not key=value
		{"--label", "Team=infra"},                         // not a valid key
		{"--label", "team=infra", "--label", "team=docs"}, // one value a key
		{"--here", "--project", repo},
	} {
		for _, cmd := range []string{"ls", "watch"} {
			r := sessions(t, nil, append([]string{cmd, "--dir", root}, args...)...)
			require.Equal(t, exitUsage, r.Code, "%s %v: %s", cmd, args, r.String())
			require.Contains(t, r.Stderr, "sessions "+cmd+": ", r.String())
			require.Empty(t, r.Stdout)
		}
	}
	r = sessions(t, nil, "search", "x", "--dir", root, "--here", "--project", repo)
	require.Equal(t, exitUsage, r.Code, "search takes --here as ls does: %s", r.String())
	for _, cmd := range []string{"ls", "watch"} {
		r = sessions(t, nil, cmd, "--help")
		for _, flag := range []string{"--label key=value", "--project directory", "--here"} {
			require.Contains(t, r.Stdout, flag, "%s --help", cmd)
		}
	}
}

// TestWatchHere: watch --here shows the sessions of the current project,
// those created while it runs included, and no others.
func TestWatchHere(t *testing.T) {
	root, repo := projectsStore(t)
	ctx, cancel := clitest.Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "sessions"), "--dir", root, "watch", "--here", "--label", "team=infra")
	cmd.Dir = filepath.Join(repo, "cmd")
	cmd.Env = clitest.CleanEnv(t)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var seen []string
	sc := bufio.NewScanner(out)
	waitFor := func(id string) {
		t.Helper()
		for sc.Scan() {
			seen = append(seen, sc.Text())
			if strings.Contains(sc.Text(), id) {
				return
			}
		}
		t.Fatalf("watch ended before showing %s; stderr: %s", id, stderr.String())
	}
	waitFor("p2-tool")
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	// Created in this order: once the second shows, the first was seen
	// and left out.
	for _, c := range []struct {
		id      string
		project string
	}{{"p5-elsewhere", t.TempDir()}, {"p6-late", repo}} {
		cfg := sessiontest.Config(c.id)
		cfg.Labels, cfg.Workspace = map[string]string{"team": "infra"}, session.Workspace{Project: c.project}
		s, err := session.New(cfg)
		require.NoError(t, err)
		writeSession(t, st, s, 0)
	}
	waitFor("p6-late")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
		seen = append(seen, sc.Text())
	}
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	all := strings.Join(seen, "\n")
	require.Contains(t, all, "p1-parser")
	for _, id := range []string{"p3-notes", "p4-bare", "p5-elsewhere"} {
		require.NotContains(t, all, id)
	}
}

// TestLsOnlyUnreadable: a store whose every session is unreadable lists
// none, says so as such, and names each on stderr.
func TestLsOnlyUnreadable(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	s, err := session.New(sessiontest.Config("lost-log"))
	require.NoError(t, err)
	writeSession(t, st, s, 0)
	require.NoError(t, st.Close())
	require.NoError(t, os.Remove(filepath.Join(root, "lost-log", jsonlstore.LogFile)))
	r := sessions(t, nil, "--dir", root, "ls")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Equal(t, "no readable sessions\n", r.Stdout)
	require.Contains(t, r.Stderr, "lost-log")
}

// TestLsAllNamesUnreadable: --all, which joins every page into one, names
// the sessions that cannot be read as a single page does, on stderr and
// in --json.
func TestLsAllNamesUnreadable(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	for _, id := range []string{"kept-a", "kept-b", "kept-c", "lost-log"} {
		s, err := session.New(sessiontest.Config(id))
		require.NoError(t, err)
		writeSession(t, st, s, 0)
	}
	require.NoError(t, st.Close())
	require.NoError(t, os.Remove(filepath.Join(root, "lost-log", jsonlstore.LogFile)))

	r := sessions(t, nil, "--dir", root, "ls", "--all", "--limit", "1")
	require.Equal(t, exitOK, r.Code, r.String())
	for _, id := range []string{"kept-a", "kept-b", "kept-c"} {
		require.Contains(t, r.Stdout, id)
	}
	require.Contains(t, r.Stderr, "session lost-log cannot be read")

	r = sessions(t, nil, "--dir", root, "ls", "--all", "--limit", "1", "--json")
	require.Equal(t, exitOK, r.Code, r.String())
	var page summary.Page
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &page), r.Stdout)
	require.Len(t, page.Items, 3)
	require.Len(t, page.Unreadable, 1)
	require.Equal(t, session.SessionID("lost-log"), page.Unreadable[0].ID)
}
