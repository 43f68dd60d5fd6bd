package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The redaction's power-loss test runs, on a store in a vfs.Sim, a
// workload that writes two sessions with their secrets (redaction off:
// a log, an archive, blobs, pages and a forensic copy each) and redacts
// the first; crashtest takes a point at every sync and crashes each
// state many ways. On every crashed state after both sessions were
// written:
//
//   - the redacted session reads as its whole old history or its whole
//     new one (every revision), never a mix, and the new one once the
//     redaction returned;
//   - the other session reads as it was written;
//   - a redaction run on the crashed state finishes: the session reads
//     as the new history, no file of it holds a byte of a secret, and
//     verify finds both sessions sound.

const rdRoot = "/sim/redact"

var rdIDs = [2]session.SessionID{"rd-a", "rd-b"}

type rdAck struct {
	written  bool // both sessions written
	redacted bool // the redaction returned
}

type rdRun struct {
	*crashtest.Recorder[rdAck]
	// oldStates and newStates count the crashed states that read as the
	// old and the new history: both kinds must occur.
	oldStates, newStates atomic.Int64
	old                  [2]string // each session's history as written
	fresh                string    // rd-a's history redacted
}

func rdWorkload(t testing.TB, mutate int) *rdRun {
	t.Helper()
	ctx := context.Background()
	rec := crashtest.Start[rdAck](mutate)
	defer rec.Stop()
	st := crashStore(t, rec, rdRoot)
	off, err := redact.New(redact.Options{Off: true})
	require.NoError(t, err)
	st.opts.Redactor = off
	st.opts.BlobThreshold, st.root.BlobThreshold = 4096, 4096
	st.opts.MaxRecordBytes, st.root.MaxRecordBytes = 64<<10, 64<<10
	run := &rdRun{Recorder: rec}
	for i, id := range rdIDs {
		rec.Step = "write " + string(id)
		makeLeakySession(t, st, id, 12)
		h, err := rdHistory(st, id)
		require.NoError(t, err)
		run.old[i] = h
	}
	rec.Ack.written = true
	rec.Mark("written")
	rec.Step = "redact"
	reps, err := st.Redact(ctx, rdIDs[:1], redact.Default(), 0)
	require.NoError(t, err)
	require.Positive(t, reps[0].Rewritten)
	rec.Ack.redacted = true
	rec.Mark("end of workload")
	run.fresh, err = rdHistory(st, rdIDs[0])
	require.NoError(t, err)
	require.NotEqual(t, run.old[0], run.fresh)
	return run
}

// rdHistory is every revision of session id (number, generation, time,
// snapshot), as text.
func rdHistory(st *Store, id session.SessionID) (string, error) {
	var b strings.Builder
	for rec, err := range st.History(context.Background(), id) {
		if err != nil {
			return "", err
		}
		j, err := sessnap.Marshal(rec.Snapshot)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%d %d %s %s\n", rec.Revision, rec.Generation, rec.Time.UTC().Format(time.RFC3339Nano), j)
	}
	return b.String(), nil
}

func (run *rdRun) check(crashed *vfs.Sim, p crashtest.Point[rdAck], _ crashtest.Crash, _ *rand.Rand) error {
	if !p.Ack.written {
		return nil
	}
	ctx := context.Background()
	st := newStore(rdRoot, nil, crashed, newSimLeaser(crashed, rdRoot), Options{})
	defer st.Close()
	a, err := rdHistory(st, rdIDs[0])
	switch {
	case err != nil:
		return crashtest.Violate("history", "%s: %v", rdIDs[0], err)
	case a == run.fresh:
		run.newStates.Add(1)
	case a == run.old[0] && !p.Ack.redacted:
		run.oldStates.Add(1)
	case a == run.old[0]:
		return crashtest.Violate("redaction acknowledged", "%s reads as its old history", rdIDs[0])
	default:
		return crashtest.Violate("mix", "%s reads as neither its old history nor its new one", rdIDs[0])
	}
	if b, err := rdHistory(st, rdIDs[1]); err != nil || b != run.old[1] {
		return crashtest.Violate("other session", "%s changed (%v)", rdIDs[1], err)
	}
	if _, err := st.Redact(ctx, rdIDs[:1], redact.Default(), 0); err != nil {
		return crashtest.Violate("rerun", "%v", err)
	}
	if a, err := rdHistory(st, rdIDs[0]); err != nil || a != run.fresh {
		return crashtest.Violate("rerun", "%s does not read as its new history (%v)", rdIDs[0], err)
	}
	if bad := simSecrets(crashed, string(rdIDs[0])); bad != "" {
		return crashtest.Violate("rerun", "%s still holds a secret", bad)
	}
	for _, id := range rdIDs {
		if rep, err := st.Verify(ctx, id); err != nil || !rep.OK() {
			return crashtest.Violate("verify", "%s: %v %+v", id, err, rep)
		}
	}
	return nil
}

// simSecrets names a file below dir of sim that holds a byte string of
// purgeSecrets ("" when none does; compressed files decompressed).
func simSecrets(sim *vfs.Sim, dir string) string {
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	for name, b := range simFilesErr(sim, dir) {
		if strings.HasSuffix(name, ".zst") {
			d, err := dec.DecodeAll([]byte(b), nil)
			if err != nil {
				return name + " (unreadable)"
			}
			b = string(d)
		}
		for _, s := range purgeSecrets {
			if bytes.Contains([]byte(b), []byte(s)) {
				return name
			}
		}
	}
	return ""
}

// TestRedactPowerLoss sweeps the crashed states of rdWorkload: every sync
// point, each crashed plSeeds ways.
func TestRedactPowerLoss(t *testing.T) {
	seeds := proctest.EnvInt(t, plSeedsEnv, plSeeds)
	start := time.Now()
	run := rdWorkload(t, -1)
	points := run.Points()
	steps := map[string]int{}
	for _, p := range points {
		steps[p.Step]++
	}
	states, distinct := crashtest.Sweep(t, points, seeds, run.check)
	t.Logf("points per step %v; %d crashed states (%d seeds each), %d distinct; %v",
		steps, states, seeds, distinct, time.Since(start).Round(time.Millisecond))
	t.Logf("crashed states after the sessions were written: %d read as the old history, %d as the new", run.oldStates.Load(), run.newStates.Load())
	require.Positive(t, steps["redact"])
	require.Positive(t, run.oldStates.Load())
	require.Positive(t, run.newStates.Load())
}
