package fslease_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
)

const (
	// contentionRounds is the number of acquisitions TestContention makes
	// in all, split among contentionProcs processes. FSLEASE_SOAK_ROUNDS
	// overrides it for a soak run (make soak).
	contentionRounds = 1000
	contentionProcs  = 4
	soakEnv          = "FSLEASE_SOAK_ROUNDS"
)

// TestContention runs contentionProcs processes that acquire and release
// one lease contentionRounds times in all, while a goroutine probes it with
// Inspect. The holders' shared enter/exit log proves that no two ever held
// the lease at once, and that generations went up by exactly one per
// acquisition. The prober proves that Inspect never fails and never sees a
// Stale lease (every release here is clean, and Inspect reads lease.json
// under its shared lock, so it cannot catch a holder mid-acquire).
func TestContention(t *testing.T) {
	rounds := proctest.EnvInt(t, soakEnv, contentionRounds)
	perProc := (rounds + contentionProcs - 1) / contentionProcs
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "events.log")
	require.NoError(t, os.WriteFile(logPath, nil, 0o600))

	ctx, stopProbe := context.WithCancel(t.Context())
	var probeWG sync.WaitGroup
	counts := map[fslease.State]int{}
	var probeErr error
	probeWG.Go(func() {
		for ctx.Err() == nil {
			st, err := fslease.Inspect(ctx, dir)
			if err != nil {
				if ctx.Err() == nil {
					probeErr = err
				}
				return
			}
			counts[st.State]++
			if st.State == fslease.Stale {
				probeErr = fmt.Errorf("probe saw a stale lease: %+v", st.Record)
				return
			}
			// Before the first holder's write there is no lease.json;
			// after it, lease.json is always whole (atomic rename).
			if st.RecordErr != nil {
				probeErr = fmt.Errorf("probe saw a held lease without a readable record: %w", st.RecordErr)
				return
			}
		}
	})

	helpers := make([]*proctest.Child, contentionProcs)
	for i := range helpers {
		helpers[i] = startHelper(t, modeContend,
			dirEnv+"="+dir, logEnv+"="+logPath, roundsEnv+"="+strconv.Itoa(perProc))
	}
	// Each wait lasts while the helpers work (proctest), however many
	// rounds a soak asks for.
	for _, h := range helpers {
		f := strings.Fields(h.Next(t))
		require.Equal(t, []string{"done", strconv.Itoa(perProc)}, f[:2])
		require.NoError(t, h.Wait(t))
	}
	stopProbe()
	probeWG.Wait()
	require.NoError(t, probeErr)
	t.Logf("%d acquisitions by %d processes; probes: %v", perProc*contentionProcs, contentionProcs, counts)
	require.Positive(t, counts[fslease.Held], "the prober never saw the lease held")

	total := checkEnterExitLog(t, logPath, perProc)
	require.Equal(t, perProc*contentionProcs, total)

	st, err := fslease.Inspect(t.Context(), dir)
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)
	require.Equal(t, uint64(total), st.Record.Generation)
}

// checkEnterExitLog verifies the enter/exit log written by contend helpers:
// lines alternate enter/exit of the same generation and pid (no overlap),
// generations are 1, 2, 3, ... (strictly increasing, no duplicates, none
// lost), and each pid entered perProc times. It returns the number of
// acquisitions.
func checkEnterExitLog(t *testing.T, path string, perProc int) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	type holder struct {
		gen uint64
		pid int
	}
	var (
		cur     *holder
		lastGen uint64
		perPID  = map[int]int{}
		n       int
	)
	sc := bufio.NewScanner(f)
	for lineNo := 1; sc.Scan(); lineNo++ {
		var (
			kind string
			h    holder
		)
		_, err := fmt.Sscanf(sc.Text(), "%s %d %d", &kind, &h.gen, &h.pid)
		require.NoError(t, err, "line %d: %q", lineNo, sc.Text())
		switch kind {
		case "enter":
			if cur != nil {
				require.FailNow(t, "two holders at once", "line %d: gen %d pid %d entered while gen %d pid %d held the lease",
					lineNo, h.gen, h.pid, cur.gen, cur.pid)
			}
			require.Equal(t, lastGen+1, h.gen, "line %d: generation not the next one", lineNo)
			lastGen = h.gen
			cur = &h
			perPID[h.pid]++
			n++
		case "exit":
			require.NotNil(t, cur, "line %d: exit without enter", lineNo)
			require.Equal(t, *cur, h, "line %d: exit of another holder", lineNo)
			cur = nil
		default:
			require.FailNow(t, "bad log line", "line %d: %q", lineNo, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "log ends inside a holding")
	require.Len(t, perPID, contentionProcs)
	for pid, c := range perPID {
		require.Equal(t, perProc, c, "pid %d", pid)
	}
	return n
}
