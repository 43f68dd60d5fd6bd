package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/testing/clitest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// hostileTitle would clear the screen, retitle the window, and reorder
// text, if a terminal were given it raw.
const hostileTitle = "ok\x1b[2J\x1b]0;pwned\x07 del\x7f c1\u009b2J bidi\u202eevil"

// hostileStore holds one session titled hostileTitle, held by a writer
// whose label has an escape sequence (held until the test ends).
func hostileStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	s := sessiontest.New("hostile")
	require.NoError(t, s.SetTitle(hostileTitle, session.TitleExplicit))
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "agent\x1b[31mred"})
	require.NoError(t, err)
	t.Cleanup(func() { w.Release(ctx) })
	return root
}

// requireNoRawControls fails when out holds a byte or character a
// terminal would act on.
func requireNoRawControls(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\x7f", "\u009b", "\u202e"} {
		require.NotContains(t, out, bad, "%s prints %q raw:\n%s", what, bad, out)
	}
}

// TestControlBytesEscaped: titles and labels reach the terminal escaped,
// in every command that prints them; JSON keeps its meaning.
func TestControlBytesEscaped(t *testing.T) {
	root := hostileStore(t)
	r := inProcess(t, "--dir", root, "ls")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	requireNoRawControls(t, "ls", r.Stdout)
	require.Contains(t, r.Stdout, `ok\x1b[2J\x1b]0;pwned\x07 del\x7f c…`, "escaped, then cut to the title column")
	require.Contains(t, r.Stdout, `held by agent\x1b[31mred`)

	r = inProcess(t, "--dir", root, "ls", "--json")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	requireNoRawControls(t, "ls --json", r.Stdout)

	r = inProcess(t, "--dir", root, "lease", "hostile")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	requireNoRawControls(t, "lease", r.Stdout)
	require.Contains(t, r.Stdout, `agent\x1b[31mred`)

	r = inProcess(t, "--dir", root, "rm", "hostile")
	require.Equal(t, exitFail, r.Code)
	requireNoRawControls(t, "rm", r.Stderr)

	r = inProcess(t, "--dir", root, "show", "hostile")
	require.Equal(t, exitOK, r.Code, r.Stderr)
	requireNoRawControls(t, "show", r.Stdout)
	var snap sessnap.Snapshot
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &snap))
	require.Equal(t, hostileTitle, snap.Title, "the same snapshot")

	shown := watchOnce(t, root)
	requireNoRawControls(t, "watch", shown)
	require.Contains(t, shown, `ok\x1b[2J`)
}

// watchOnce runs watch (not on a terminal) until its first table and
// returns what it printed.
func watchOnce(t *testing.T, root string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"--dir", root, "watch"}, out, out) }()
	for {
		changed := out.changed()
		if strings.Contains(out.String(), "LEASE") {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("watch ended with %d: %s", code, out.String())
		case <-changed:
		case <-time.After(time.Minute):
			t.Fatalf("watch printed no table: %s", out.String())
		}
	}
	cancel()
	require.Equal(t, exitOK, <-done)
	return out.String()
}

// syncBuffer is a buffer for one writer and one reader, which can wait
// for the next write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{} // closed by the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// changed returns a channel closed by the next write.
func (s *syncBuffer) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// ansi matches the escape sequences a terminal program writes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r`)

// onTerminal runs the sessions binary with args on a pseudo-terminal of
// 80 columns (util-linux script(1)), stopped after stopAfter (for watch),
// and returns what the terminal showed.
func onTerminal(t *testing.T, env []string, stopAfter string, args ...string) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give the command a terminal")
	}
	line := "stty cols 80 rows 30; "
	if stopAfter != "" {
		// --foreground: timeout(1) otherwise sends the signal twice, to
		// the command and to its process group, and the second one, meant
		// to end a command that ignores the first, could arrive after the
		// first had restored the default and kill it with status 130.
		line += "timeout --foreground --preserve-status -s INT " + stopAfter + " "
	}
	line += filepath.Join(binDir, "sessions")
	for _, a := range args {
		line += " '" + a + "'"
	}
	cmd := exec.Command(script, "-qec", line, "/dev/null")
	cmd.Env = append(clitest.CleanEnv(t), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestTerminalWidthAndColor: on an 80-column terminal, ls and watch fit
// (watch also keeps its header), with colors for states and stale
// leases; with NO_COLOR there are none, and piped output has none.
func TestTerminalWidthAndColor(t *testing.T) {
	root := statesStore(t)
	for _, tc := range []struct {
		name      string
		stopAfter string
		args      []string
	}{
		{"ls", "", []string{"--dir", root, "ls"}},
		{"watch", "2", []string{"--dir", root, "watch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := onTerminal(t, nil, tc.stopAfter, tc.args...)
			require.Regexp(t, `\x1b\[3[1-6]m`, raw, "colors on a terminal")
			shown := ansi.ReplaceAllString(raw, "")
			require.Contains(t, shown, "s11-stale")
			require.Contains(t, shown, "LEASE")
			for _, l := range strings.Split(shown, "\n") {
				require.LessOrEqual(t, cli.Width(l), 80, "a line wider than the terminal: %q", l)
			}
			if tc.name == "watch" {
				require.Contains(t, shown, root+"  11 sessions  ", "the header")
			}
			plain := onTerminal(t, []string{"NO_COLOR=1"}, tc.stopAfter, tc.args...)
			require.NotRegexp(t, `\x1b\[[0-9;]*m`, plain, "NO_COLOR")
		})
	}
	r := sessions(t, nil, "--dir", root, "ls")
	require.NotContains(t, r.Stdout, "\x1b", "no colors when piped")
}

// TestStoreIsNotADirectory: reading commands never create the store and
// say plainly that there is none, for a missing path and for a file.
func TestStoreIsNotADirectory(t *testing.T) {
	root := fixtureStore(t, "clean")
	file := filepath.Join(root, "clean", jsonlstore.LogFile)
	missing := filepath.Join(t.TempDir(), "nothing-here")
	for _, args := range [][]string{
		{"ls"}, {"show", "clean"}, {"log", "clean"}, {"lease", "clean"}, {"verify"}, {"du"}, {"export", "clean"},
		{"repair", "clean"}, {"rm", "clean"}, {"backup", t.TempDir()}, {"compact", "--keep-last", "1"}, {"watch"},
	} {
		r := sessions(t, nil, append([]string{"--dir", file}, args...)...)
		require.Equal(t, exitFail, r.Code, "%v: %s", args, r.String())
		require.Contains(t, r.Stderr, "no store at "+file+": it is not a directory", args)
		require.NotContains(t, r.Stderr, "mkdir", args)
		r = sessions(t, nil, append([]string{"--dir", missing}, args...)...)
		require.Equal(t, exitFail, r.Code, "%v: %s", args, r.String())
		require.Contains(t, r.Stderr, "no store at "+missing+": it does not exist", args)
		_, err := os.Stat(missing)
		require.ErrorIs(t, err, os.ErrNotExist, "%v created the store", args)
	}
}

// TestPasswordsNeverPrinted: a DSN's password (in the user information or
// a password parameter) appears in no message.
func TestPasswordsNeverPrinted(t *testing.T) {
	dsn := "postgres://agent:s3cret@127.0.0.1:1/sessions?password=hunter2&connect_timeout=2" //nolint:gosec // G101: a made-up password the test looks for in the output
	for _, args := range [][]string{{"repair", "x"}, {"backup", t.TempDir()}, {"du"}, {"watch"}, {"ls"}, {"verify"}} {
		r := sessions(t, nil, append([]string{"--dir", dsn}, args...)...)
		require.Equal(t, exitFail, r.Code, "%v: %s", args, r.String())
		require.NotContains(t, r.String(), "s3cret", args)
		require.NotContains(t, r.String(), "hunter2", args)
	}
	r := sessions(t, nil, "--dir", dsn, "repair", "x")
	require.Contains(t, r.Stderr, "postgres://agent:xxxxx@127.0.0.1:1/sessions?", "the store is named, without its password")
}

// TestExportAllRevisionsAsks: on a terminal, export --all-revisions says
// how much it would write, read from the records without rebuilding them
// (at least what it writes), and writes nothing unless told yes; --yes
// writes without asking.
func TestExportAllRevisionsAsks(t *testing.T) {
	root := statesStore(t)
	piped := sessions(t, nil, "--dir", root, "export", "s6-cancelled", "--all-revisions")
	require.Equal(t, exitOK, piped.Code, piped.Stderr)
	revs := strings.Count(piped.Stdout, "\n")
	require.Greater(t, revs, 1)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give the command a terminal")
	}
	run := func(answer string, args ...string) string {
		line := "stty cols 80 rows 30; " + filepath.Join(binDir, "sessions") + " --dir '" + root + "' export s6-cancelled --all-revisions"
		for _, a := range args {
			line += " " + a
		}
		cmd := exec.Command(script, "-qc", line+"; echo EXIT=$?", "/dev/null")
		cmd.Env = clitest.CleanEnv(t)
		cmd.Stdin = strings.NewReader(answer)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return ansi.ReplaceAllString(string(out), "")
	}
	shown := run("n\n")
	m := regexp.MustCompile(`--all-revisions writes (\d+) revisions \(at least ([0-9.]+ [KMG]?i?B)\) of JSON to the terminal\. Write it\? \[y/N\]`).FindStringSubmatch(shown)
	require.NotNil(t, m, shown)
	require.Equal(t, strconv.Itoa(revs), m[1])
	require.Contains(t, shown, "nothing written")
	require.Contains(t, shown, "EXIT=1")
	require.NotContains(t, shown, `"revision":`, "nothing of the history")

	shown = run("", "--yes")
	require.Contains(t, shown, "EXIT=0")
	require.Equal(t, revs, strings.Count(shown, `{"revision":`), "every revision, without asking")
	require.NotContains(t, shown, "Write it?")
}

// TestExportAllRevisionsWarnsAPipe: to a pipe, export --all-revisions
// writes without asking, and says first on stderr how much it writes when
// that is large (the threshold lowered here by the hidden --warn-bytes);
// a small export says nothing.
func TestExportAllRevisionsWarnsAPipe(t *testing.T) {
	root := statesStore(t)
	quiet := sessions(t, nil, "--dir", root, "export", "s6-cancelled", "--all-revisions")
	require.Equal(t, exitOK, quiet.Code, quiet.Stderr)
	require.Empty(t, quiet.Stderr, "a small export says nothing")
	loud := sessions(t, nil, "--dir", root, "export", "s6-cancelled", "--all-revisions", "--warn-bytes", "1")
	require.Equal(t, exitOK, loud.Code, loud.Stderr)
	require.Equal(t, quiet.Stdout, loud.Stdout, "the warning changes nothing written")
	require.Regexp(t, `^sessions export: --all-revisions writes \d+ revisions \(at least [0-9.]+ [KMG]?i?B\) of JSON: every revision spelled out; --format jsonl holds the same history as stored\n$`, loud.Stderr)
}
