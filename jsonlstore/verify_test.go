package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

func TestVerifyFixtures(t *testing.T) {
	type want struct {
		problemLine int    // line of the first problem; -1: sound
		records     int    // sound records before it (or all)
		tailNote    bool   // an uncommitted tail is noted
		note        string // a note containing this, if not empty
	}
	tail := want{problemLine: -1, records: 5, tailNote: true}
	tests := map[string]want{
		"clean":                        {problemLine: -1, records: 5},
		"partial-last-line":            tail,
		"nul-tail":                     tail,
		"crc-fail-last-line":           tail,
		"torn-page-last-line":          tail,
		"last-line-no-newline":         tail,
		"crlf":                         {problemLine: 0, records: 0},
		"bom":                          {problemLine: 0, records: 0},
		"bitflip-middle":               {problemLine: 2, records: 2},
		"bitflip-revision":             {problemLine: 2, records: 2},
		"duplicated-revision":          {problemLine: 3, records: 3},
		"revision-gap":                 {problemLine: 2, records: 2},
		"generation-backwards":         {problemLine: 3, records: 3},
		"crc-fail-claims-old-revision": {problemLine: 5, records: 5},
		"two-damaged-lines-tail":       {problemLine: 5, records: 5},
		"newer-schema":                 {problemLine: -1, records: 5, note: "schema 99"},
		"deltas":                       {problemLine: -1, records: 7},
		"v1-then-v2":                   {problemLine: -1, records: 7},
		"delta-bad-middle":             {problemLine: 2, records: 2},
		"delta-bad-last":               {problemLine: 2, records: 2},
		"delta-base-damaged":           {problemLine: 1, records: 1},
		"delta-first-record":           {problemLine: 0, records: 0},
		"newer-format":                 {problemLine: 1, records: 1},
		"newer-format-v5":              {problemLine: -1, records: 1},
		"newer-after-deltas":           {problemLine: -1, records: 6},
		"unknown-kind":                 {problemLine: -1, records: 1},
		"unknown-kind-built-on":        {problemLine: -1, records: 1},
		"duplicated-tail-deltas":       {problemLine: 16, records: 16},
		"duplicated-tail-full":         {problemLine: 16, records: 16},
		"repaired-gap":                 {problemLine: -1, records: 6, note: "revisions 4 to 5 are missing"},
		"v4-blobs":                     {problemLine: -1, records: 7},
		"v4-pages":                     {problemLine: -1, records: 25},
		"v4-blob-torn":                 {problemLine: -1, records: 7},
		"v4-blob-missing":              {problemLine: 2, records: 2},
		"v4-blob-damaged":              {problemLine: 2, records: 2},
	}
	names := toolFixtureNames(t)
	require.Len(t, names, len(tests), "every fixture has a row")
	st, root := toolStore(t, Options{}, names...)
	ctx := context.Background()

	all, err := st.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, all.Sessions, len(names))
	require.False(t, all.OK())

	for _, name := range names {
		w := tests[name]
		t.Run(name, func(t *testing.T) {
			id := session.SessionID(name)
			data := toolFixture(t, name)
			rep, err := st.Verify(ctx, id)
			require.NoError(t, err)
			require.Len(t, rep.Sessions, 1)
			sr := rep.Sessions[0]
			require.Equal(t, id, sr.ID)
			require.Equal(t, w.records, sr.Records, "%+v", sr)
			if w.problemLine < 0 {
				require.True(t, rep.OK(), "%+v", sr.Problems)
				require.True(t, sr.OK())
			} else {
				require.False(t, rep.OK())
				require.Len(t, sr.Problems, 1)
				p := sr.Problems[0]
				require.Equal(t, name+"/"+LogFile, p.File)
				require.Equal(t, toolLineOffset(data, w.problemLine), p.Offset, "%s", p)
				require.NotEmpty(t, p.Message)
			}
			// History meets a corrupt record at the same place.
			for _, err := range st.History(ctx, id) {
				var ce *sessionstore.CorruptionError
				if errors.As(err, &ce) && len(sr.Problems) > 0 {
					require.Equal(t, ce.Offset, sr.Problems[0].Offset)
				}
			}
			var tailNotes int
			for _, n := range sr.Notes {
				if strings.Contains(n.Message, "uncommitted tail") {
					tailNotes++
					require.Equal(t, toolLineOffset(data, 5), n.Offset)
				}
			}
			require.Equal(t, w.tailNote, tailNotes == 1, "notes %+v", sr.Notes)
			if w.note != "" {
				require.Contains(t, fmt.Sprint(sr.Notes), w.note)
			}
			after, err := os.ReadFile(filepath.Join(root, name, LogFile))
			require.NoError(t, err)
			require.Equal(t, data, after, "verify never modifies")
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	ctx := context.Background()
	st, _ := toolStore(t, Options{}, "clean")
	_, err := st.Verify(ctx, "missing")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	_, err = st.Verify(ctx, "../etc")
	require.ErrorIs(t, err, sessionstore.ErrInvalidID)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = st.Verify(cctx, "clean")
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, st.Close())
	_, err = st.Verify(ctx)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}

// TestVerifyFlippedBits flips one bit in records of a store's own session:
// in the middle, a record followed by valid ones is corruption; in the
// last record it is corruption too, because summary.json vouches that
// revision was committed (without that evidence it would be a tail).
func TestVerifyFlippedBits(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		line     int
		records  int
		dropSumm bool // remove summary.json: the damaged last line becomes a tail
		problem  bool
	}{
		{name: "middle", line: 3, records: 3, problem: true},
		{name: "first", line: 0, records: 0, problem: true},
		{name: "last-with-summary", line: 5, records: 5, problem: true},
		{name: "last-without-summary", line: 5, records: 5, dropSumm: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openUncheckedStore(t) // damaged on purpose
			path := toolSession(t, st, "flip", 6)
			rep, err := st.Verify(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
			require.Equal(t, 6, rep.Sessions[0].Records)

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			off := toolLineOffset(data, tc.line)
			toolFlip(t, path, off+(toolLineOffset(data, tc.line+1)-off)/2)
			if tc.dropSumm {
				require.NoError(t, os.Remove(filepath.Join(st.Dir(), "flip", SummaryFile)))
			}
			rep, err = st.Verify(ctx, "flip")
			require.NoError(t, err)
			sr := rep.Sessions[0]
			require.Equal(t, tc.records, sr.Records)
			if !tc.problem {
				require.True(t, sr.OK(), "%+v", sr)
				require.Len(t, sr.Notes, 1)
				require.Contains(t, sr.Notes[0].Message, "uncommitted tail")
				return
			}
			require.Len(t, sr.Problems, 1, "%+v", sr)
			require.Equal(t, off, sr.Problems[0].Offset)
			require.Equal(t, "flip/"+LogFile, sr.Problems[0].File)
		})
	}
}

// TestVerifyPayloadDoesNotRestore: a record with a sound checksum whose
// snapshot does not restore (awaiting without a pending ask) is a problem.
func TestVerifyPayloadDoesNotRestore(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	path := toolSession(t, st, "norestore", 2)
	snap := sessiontest.Snap(t, sessiontest.InState("norestore", session.StateRunning))
	snap.State = session.StateAwaiting
	payload, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	line := record.Encode(record.Meta{Version: record.Version4, Schema: sessnap.SchemaVersion, Rev: 3, Gen: 1, Time: time.Now().UTC(), Kind: record.KindFull}, payload)
	require.NoError(t, os.WriteFile(path, append(data, line...), 0o600))

	rep, err := st.Verify(ctx, "norestore")
	require.NoError(t, err)
	sr := rep.Sessions[0]
	require.Equal(t, 2, sr.Records)
	require.Len(t, sr.Problems, 1)
	require.Equal(t, int64(len(data)), sr.Problems[0].Offset)
	require.Equal(t, uint64(3), sr.Problems[0].Revision)
	require.Contains(t, sr.Problems[0].Message, "does not restore")
}

// TestVerifySummaryDisagrees: a summary.json written for exactly the log
// on disk that says something else than the log is a problem.
func TestVerifySummaryDisagrees(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // damaged on purpose
	toolSession(t, st, "summ", 3)
	sf, ok := logfile.ReadSummary(st.fs, "summ")
	require.True(t, ok)
	sf.Summary.Title = "not what the log says"
	sf.Summary.MessageCount = 42
	b, err := logfile.EncodeSummary(sf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "summ", SummaryFile), b, 0o600))

	rep, err := st.Verify(ctx, "summ")
	require.NoError(t, err)
	sr := rep.Sessions[0]
	require.Len(t, sr.Problems, 1, "%+v", sr)
	p := sr.Problems[0]
	require.Equal(t, "summ/"+SummaryFile, p.File)
	require.Contains(t, p.Message, "message_count is 42, the log says 2")
	require.Contains(t, p.Message, "title")
	require.Equal(t, 3, sr.Records, "the log itself was checked whole")
}

// TestVerifyNotes: forensic files and archives are noted, not problems.
func TestVerifyNotes(t *testing.T) {
	ctx := context.Background()
	st, root := toolStore(t, Options{}, "partial-last-line")
	w, err := st.Acquire(ctx, "partial-last-line", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	require.NoError(t, os.Mkdir(filepath.Join(root, "partial-last-line", ArchiveDir), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "partial-last-line", ArchiveDir, "x.zst"), []byte("x"), 0o600))
	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK())
	notes := fmt.Sprint(rep.Sessions[0].Notes)
	require.Contains(t, notes, "partial-last-line/archive/x.zst offset 0: not part of the archive")
	require.Contains(t, notes, "removed from the log by earlier recoveries")
	require.NotContains(t, notes, "uncommitted tail")
}

// TestVerifyLiveStore runs Verify over and over while writers append to
// their sessions (one compacting its own now and then) and one session
// goes through torn appends and recoveries (a holder's garbage tail,
// truncated by the next holder):
// Verify must never report a problem — the false alarm a reader racing
// a truncation or an append could raise.
func TestVerifyLiveStore(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	const writers = 3
	deadline := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	var appends, recoveries, compactions atomic.Int64
	errs := make(chan error, writers+4)
	for i := range writers {
		id := session.SessionID(fmt.Sprintf("live-%d", i))
		s := sessiontest.New(string(id))
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{Label: "writer"})
		require.NoError(t, err)
		wg.Go(func() {
			defer w.Release(ctx)
			// Messages of a few KiB: every snapshot holds them all, so
			// appends soon span pages and a reader may see part of one.
			for rev := uint64(1); time.Now().Before(deadline); rev++ {
				text := strings.Repeat(fmt.Sprintf("m%d ", rev), 1+int(rev%4)*100)
				if err := s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)); err != nil {
					errs <- err
					return
				}
				snap, err := sessnap.Of(s)
				if err != nil {
					errs <- err
					return
				}
				if _, err := w.Append(ctx, rev, snap); err != nil {
					errs <- err
					return
				}
				appends.Add(1)
				if i == 0 && rev%8 == 0 {
					// One writer compacts its session now and then: the
					// log is replaced under the verifiers.
					if _, err := w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 3}); err != nil {
						errs <- err
						return
					}
					compactions.Add(1)
				}
			}
		})
	}
	// A session whose holders die mid-append: garbage after the last
	// record, then a new holder recovers (moves it to forensic/ and
	// truncates).
	torn := session.SessionID("torn")
	path := toolSession(t, st, torn, 2)
	wg.Go(func() {
		for i := 0; time.Now().Before(deadline); i++ {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				errs <- err
				return
			}
			_, err = f.Write([]byte(`{"v":1,"schema":1,"rev":` + strings.Repeat("9", i%50)))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				errs <- err
				return
			}
			w, err := st.Acquire(ctx, torn, sessionstore.AcquireOptions{Label: "recoverer"})
			if err != nil {
				errs <- err
				return
			}
			if w.Recovery().TailBytes == 0 {
				err = fmt.Errorf("recovery found no tail: %+v", w.Recovery())
			}
			if rerr := w.Release(ctx); err == nil {
				err = rerr
			}
			if err != nil {
				errs <- err
				return
			}
			recoveries.Add(1)
		}
	})
	// Two verifiers check one session each, as fast as they can, so that
	// many of their reads race a truncation by recovery, or a log
	// replaced by compaction; the test goroutine checks them all.
	var oneVerifies atomic.Int64
	for _, id := range []session.SessionID{torn, "live-0"} {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				rep, err := st.Verify(ctx, id)
				if err == nil && !rep.OK() {
					err = fmt.Errorf("false alarm on a live store: %+v", rep)
				}
				if err != nil {
					errs <- err
					return
				}
				oneVerifies.Add(1)
			}
		})
	}
	var verifies int
	for time.Now().Before(deadline) {
		rep, err := st.Verify(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "false alarm on a live store: %+v", rep)
		verifies++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	t.Logf("%d verifies of all sessions and %d of one during %d appends, %d compactions and %d recoveries",
		verifies, oneVerifies.Load(), appends.Load(), compactions.Load(), recoveries.Load())
	require.Positive(t, compactions.Load())
	require.Positive(t, recoveries.Load())
	require.Greater(t, oneVerifies.Load(), int64(10))
}
