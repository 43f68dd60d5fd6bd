package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/proctest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// procModeResume: until stdin closes, resume session ID (which must
// exist) — with sessionstore.Resume, or on odd turns with Acquire and a
// Load apart — print "resumed rev=N", append the next message
// (resumeMessageAt) and acknowledge it ("ack REV"), release, and again:
// an agent that resumes its session once per turn.
const procModeResume = "resume"

// resumeKillRounds is the number of resumers TestKillDuringResumedAppend
// kills (killRoundsEnv raises it).
const resumeKillRounds = 40

// resumeInitial is how many messages the resumed session starts with.
const resumeInitial = 8

// resumeLargeInline reports whether message i is a write of many pages
// kept inline (12 or 15 KiB, below the blob threshold).
func resumeLargeInline(i int) bool { return i%6 == 1 || i%6 == 3 }

// killAimAtGrowth returns as soon as the log grows: the child is in the
// middle of a write.
func killAimAtGrowth(t *testing.T, child *proctest.Child, logFile string) {
	t.Helper()
	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	base := fi.Size()
	check := child.Watch(t, "the log to grow")
	for i := 0; ; i++ {
		fi, err := f.Stat()
		require.NoError(t, err)
		if fi.Size() != base {
			return
		}
		if i%1024 == 0 {
			check()
		}
	}
}

// resumeMessageAt is message i of the resumed session: user text of a
// size that cycles from 200 bytes to 40 KiB, so that some first appends
// after a resume are writes of many pages (a kill lands inside them) and
// some keep their content out of line (a blob written before the record).
func resumeMessageAt(i int) session.Message {
	sizes := []int{200, 12 << 10, 600, 15 << 10, 40 << 10, 3 << 10}
	n := sizes[i%len(sizes)]
	unit := fmt.Sprintf("message %d says ", i)
	text := strings.Repeat(unit, n/len(unit)+1)[:n]
	return session.TextMessage(session.RoleUser, text, sessiontest.Epoch.Add(time.Duration(i)*time.Second))
}

// resumeChild is the procModeResume helper.
func resumeChild(ctx context.Context) error {
	id := session.SessionID(os.Getenv(procIDEnv))
	st, err := Open(os.Getenv(procDirEnv), Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	for turn := 0; ; turn++ {
		select {
		case <-stop:
			fmt.Println("done")
			return nil
		default:
		}
		w, rec, err := resumeTurn(ctx, st, id, turn%2 == 1)
		if err != nil {
			return err
		}
		fmt.Printf("resumed rev=%d\n", rec.Revision)
		s, err := rec.Session()
		if err != nil {
			return err
		}
		if err := s.AppendMessage(resumeMessageAt(len(rec.Snapshot.Messages))); err != nil {
			return err
		}
		snap, err := sessnap.Of(s)
		if err != nil {
			return err
		}
		rev, err := w.Append(ctx, rec.Revision, snap)
		if err != nil {
			return fmt.Errorf("append revision %d: %w", rec.Revision+1, err)
		}
		fmt.Printf("ack %d\n", rev)
		if err := w.Release(ctx); err != nil {
			return err
		}
	}
}

// resumeTurn resumes session id: with sessionstore.Resume, or (apart)
// with Acquire and then Load.
func resumeTurn(ctx context.Context, st *Store, id session.SessionID, apart bool) (sessionstore.Writer, sessionstore.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, proctest.ChildWait)
	defer cancel()
	if !apart {
		return sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{Label: "resumer"})
	}
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{Label: "resumer"})
	if err != nil {
		return nil, sessionstore.Record{}, err
	}
	rec, err := st.Load(ctx, id)
	if err != nil {
		_ = w.Release(ctx)
		return nil, sessionstore.Record{}, err
	}
	return w, rec, nil
}

// requireResumedMessages checks that rec holds messages 0… of the resumed
// session exactly as resumeMessageAt wrote them.
func requireResumedMessages(t *testing.T, rec sessionstore.Record, what string) {
	t.Helper()
	for i, m := range rec.Snapshot.Messages {
		want := resumeMessageAt(i)
		require.Equal(t, want.Parts[0].Text, m.Parts[0].Text, "%s: revision %d, message %d", what, rec.Revision, i)
	}
}

// TestKillDuringResumedAppend kills (SIGKILL), round after round, a
// helper that resumes a session and appends one message per resume
// (procModeResume): right after it resumed (so that the kill lands in the
// first append after a resume, in its blob or its record), after a random
// delay, or right after an acknowledgment. After each kill, Load returns
// a revision at least as high as the last acknowledged one, every message
// of it as written, and History every revision; then the parent resumes
// the session itself — recovering the dead holder's torn tail when there
// is one — and its first append of one message is a delta, which loads
// back. The log's records are deltas but for the chain policy's full
// records.
func TestKillDuringResumedAppend(t *testing.T) {
	rounds := min(proctest.EnvInt(t, killRoundsEnv, resumeKillRounds), 10*resumeKillRounds)
	seed := procSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x726573))
	dir := t.TempDir()
	const id = "resume-kill"
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	verifyAtCleanup(t, st)
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()

	s := sessiontest.New(id)
	for i := range resumeInitial {
		require.NoError(t, s.AppendMessage(resumeMessageAt(i)))
	}
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))

	logFile := filepath.Join(dir, filepath.FromSlash(layout.LogPath(id)))
	tails, how := 0, [4]int{}
	for round := range rounds {
		child := startProc(t, procModeResume, procEnv(dir, id, seed)...)
		// The kill: right after the k-th resume (its first append under
		// way), after a delay of up to 3 ms from it, or right after an
		// acknowledgment.
		k := 1 + rng.IntN(3)
		mode := rng.IntN(4)
		var resumedAt uint64
		for i := 0; ; i++ {
			line := child.Next(t)
			require.True(t, strings.HasPrefix(line, "resumed "), "%s", line)
			resumedAt = proctest.Uint(t, proctest.Fields(t, line, "resumed"), "rev")
			if mode == 3 && i < 12 && !resumeLargeInline(int(resumedAt)+resumeInitial-1) {
				child.WaitAcks(t, i+1) // aimed at a large write: not this one
				continue
			}
			if mode == 3 || i >= k-1 {
				break
			}
			child.WaitAcks(t, i+1)
		}
		switch mode {
		case 0: // at once: in the first append after the resume
			how[0]++
		case 1: // after a random delay
			how[1]++
			time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
		case 2: // right after the resumed append's acknowledgment
			how[2]++
			n, _ := child.Acks()
			child.WaitAcks(t, n+1)
		default: // as soon as the log grows under the first append's write
			how[3]++
			killAimAtGrowth(t, child, logFile)
		}
		child.Kill(t)
		_, acked := child.Acks()

		rec, err := st.Load(ctx, id)
		require.NoError(t, err, "round %d: load after the kill", round)
		require.GreaterOrEqual(t, rec.Revision, acked, "round %d: an acknowledged revision is lost", round)
		requireResumedMessages(t, rec, fmt.Sprintf("round %d, load after the kill", round))
		if round%10 == 9 || round == rounds-1 {
			n := uint64(0)
			for r, err := range st.History(ctx, id) {
				require.NoError(t, err, "round %d: history", round)
				n++
				require.Equal(t, n, r.Revision)
				requireResumedMessages(t, r, fmt.Sprintf("round %d, history", round))
			}
		}

		// The parent resumes (a takeover) and appends one message.
		tail, info := parentResumeAppend(t, st, id, fmt.Sprintf("round %d", round))
		if tail > 0 {
			tails++
		}
		if info.Kind != record.KindDelta {
			// A full record only where the chain policy starts a chain.
			require.Equal(t, record.KindFull, info.Kind)
		}
	}
	kinds := map[string]int{}
	for info, err := range st.Records(ctx, id) {
		require.NoError(t, err)
		kinds[info.Kind]++
	}
	t.Logf("%d rounds (kills right after a resume %d, after a delay %d, after an ack %d, aimed at a large write %d); tails recovered %d; records %v",
		rounds, how[0], how[1], how[2], how[3], tails, kinds)
	require.Greater(t, kinds[record.KindDelta], 4*kinds[record.KindFull], "a resumed session's records are deltas, but for the chain policy's full records")

	// Whether a kill lands inside a write is the scheduler's choice (the
	// rounds above recover 0 to 3 torn tails in 40), so the torn tail is
	// also made here, as a writer killed inside its write leaves it: the
	// first half of a record line after the last whole one. The resume
	// cuts exactly it, and its first append is a delta that loads back.
	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.True(t, bytes.HasSuffix(data, []byte("\n")), "the log ends with a whole line")
	last := data[bytes.LastIndexByte(data[:len(data)-1], '\n')+1:]
	torn := last[:len(last)/2]
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(torn)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tail, info := parentResumeAppend(t, st, id, "over a torn tail")
	require.Equal(t, int64(len(torn)), tail, "the torn tail is what recovery cuts")
	require.Equal(t, record.KindDelta, info.Kind, "the first append after cutting a torn tail is a delta")
}

// parentResumeAppend resumes session id as "parent" (a takeover), checks
// the resumed messages, appends the next one, releases, and checks that
// the session loads with it. It returns the torn tail the resume's
// recovery cut and the record the append wrote.
func parentResumeAppend(t *testing.T, st *Store, id session.SessionID, what string) (int64, sessionstore.RecordInfo) {
	t.Helper()
	ctx := t.Context()
	w, rec, err := sessionstore.Resume(ctx, st, id, sessionstore.AcquireOptions{Label: "parent"})
	require.NoError(t, err, "%s: resume", what)
	tail := w.Recovery().TailBytes
	requireResumedMessages(t, rec, what+", resumed")
	next := rec.Snapshot
	next.Messages = append(next.Messages, resumeMessageAt(len(next.Messages)))
	rev, err := w.Append(ctx, rec.Revision, next)
	require.NoError(t, err, "%s: append", what)
	require.NoError(t, w.Release(ctx))
	info := lastRecord(t, st, id)
	require.Equal(t, rev, info.Revision)
	requireResumedMessages(t, loadOf(t, st, id), what+", after the parent's append")
	return tail, info
}

func lastRecord(t *testing.T, st *Store, id session.SessionID) sessionstore.RecordInfo {
	t.Helper()
	var last sessionstore.RecordInfo
	for info, err := range st.Records(t.Context(), id) {
		require.NoError(t, err)
		last = info
	}
	return last
}

func loadOf(t *testing.T, st *Store, id session.SessionID) sessionstore.Record {
	t.Helper()
	rec, err := st.Load(t.Context(), id)
	require.NoError(t, err)
	return rec
}
