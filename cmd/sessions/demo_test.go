package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemo runs the demo twice on one store — the second time on an
// existing store — while the verify binary runs again and again beside it:
// verify must never report corruption, whatever the killed agent left.
// Each run must end with an ls table listing its three sessions completed,
// the taken-over one included.
func TestDemo(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var verifies int
	var verifyErr error
	wg.Go(func() {
		for ctx.Err() == nil {
			r := sessions(t, nil, "--dir", root, "verify", "--quiet")
			if r.Code == exitUsage && strings.Contains(r.Stderr, "no store at") {
				time.Sleep(10 * time.Millisecond) // the demo has not created it yet
				continue
			}
			if r.Code != exitOK {
				verifyErr = fmt.Errorf("verify during the demo:\n%s", r)
				return
			}
			verifies++
		}
	})
	takeover := regexp.MustCompile(`rescuer \(pid \d+\) takes over session ([0-9A-Z]+)`)
	drives := regexp.MustCompile(`agent-(\d) \(pid \d+\) drives session ([0-9A-Z]+)`)
	var lastRm []string
	for run := 1; run <= 2; run++ {
		start := time.Now()
		r := sessions(t, nil, "--dir", root, "demo", "--delay", "30ms")
		require.Equal(t, exitOK, r.Code, r.String())
		t.Logf("demo run %d took %s", run, time.Since(start).Round(time.Millisecond))
		out := r.Stdout
		for _, want := range []string{
			"killed agent-2 (pid ", "with SIGKILL after revision ",
			"is stale: it died holding the lease", "acquired the lease: generation 2 > 1",
			"restored revision ", "awaiting the user's approval", "user approved",
			"[rescuer] released the lease", "verify: 3 sessions", "all sound",
		} {
			require.Contains(t, out, want)
		}
		m := takeover.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		ids := []string{m[1]}
		agent := map[string]string{} // "1" → its session
		for _, d := range drives.FindAllStringSubmatch(out, -1) {
			ids = append(ids, d[2])
			agent[d[1]] = d[2]
		}
		require.Len(t, ids, 4, "the rescued session, then the three agents' sessions")
		here, search := strings.Index(out, "sessions ls --here --label team=core"), strings.Index(out, "sessions search --here flaky")
		require.Positive(t, here, out)
		require.Greater(t, search, here, out)
		table := out[strings.Index(out, "\nID "):here]
		// This project's sessions of team core: agents 1 and 2 (the
		// demo's working directory is in this repository), not the
		// scheduled agent's, whose project is another.
		hereTable := out[here:search]
		require.NotEmpty(t, tableRow(hereTable, agent["1"]), hereTable)
		require.NotEmpty(t, tableRow(hereTable, agent["2"]), hereTable)
		require.Empty(t, tableRow(hereTable, agent["3"]), hereTable)
		require.Contains(t, out[search:], agent["1"]+"  rev 1  ", "the search finds agent-1's prompt")
		require.Contains(t, out[search:], "«flaky»")
		for _, id := range ids {
			row := tableRow(table, id)
			require.NotEmpty(t, row, "ls lists %s:\n%s", id, table)
			require.Contains(t, row, " completed ", row)
			require.True(t, strings.HasSuffix(row, " free"), row)
		}
		// It ends with the command that removes what it wrote.
		rmLine := regexp.MustCompile(`demo:   sessions --dir (\S+) rm ((?:[0-9A-Z]+ ?)+)\n`).FindStringSubmatch(out)
		require.NotNil(t, rmLine, out)
		require.Equal(t, root, rmLine[1])
		require.ElementsMatch(t, []string{agent["1"], agent["2"], agent["3"]}, strings.Fields(rmLine[2]))
		lastRm = strings.Fields(rmLine[2])
	}
	cancel()
	wg.Wait()
	require.NoError(t, verifyErr)
	t.Logf("%d verify runs during the demos", verifies)
	r := sessions(t, nil, "--dir", root, "ls", "--state", "completed", "--json")
	require.Equal(t, exitOK, r.Code)
	require.Equal(t, 6, strings.Count(r.Stdout, `"state": "completed"`))
	r = sessions(t, nil, append([]string{"--dir", root, "rm"}, lastRm...)...)
	require.Equal(t, exitOK, r.Code, r.String())
	r = sessions(t, nil, "--dir", root, "ls", "--state", "completed", "--json")
	require.Equal(t, exitOK, r.Code)
	require.Equal(t, 3, strings.Count(r.Stdout, `"state": "completed"`), "the second run's sessions are gone")
}

func tableRow(table, id string) string {
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, id+" ") {
			return l
		}
	}
	return ""
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/store-1": "/tmp/store-1",
		"":             "''",
		"/a b":         "'/a b'",
		"it's":         `'it'\''s'`,
		"$HOME;rm":     "'$HOME;rm'",
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
}
