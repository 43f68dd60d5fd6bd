package jsonlstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

func TestRepairFixtures(t *testing.T) {
	type want struct {
		found     int  // line of the corruption found; -1: none
		plainFail bool // Repair without truncation fails (corruption)
		cutFail   bool // Repair with truncation refuses (nothing sound to keep)
		kept      uint64
		tail      bool // normal recovery removes a tail
		newer     bool // a newer version's records: every repair refuses and changes nothing
		records   int  // records after the repair, when not kept (a gap record stands for several)
	}
	tail := want{found: -1, kept: 5, tail: true}
	tests := map[string]want{
		"clean":                        {found: -1, kept: 5},
		"partial-last-line":            tail,
		"nul-tail":                     tail,
		"crc-fail-last-line":           tail,
		"torn-page-last-line":          tail,
		"last-line-no-newline":         tail,
		"crlf":                         {found: 0, plainFail: true, cutFail: true},
		"bom":                          {found: 0, plainFail: true, cutFail: true},
		"bitflip-middle":               {found: 2, plainFail: true, kept: 2},
		"bitflip-revision":             {found: 2, plainFail: true, kept: 2},
		"duplicated-revision":          {found: 3, plainFail: true, kept: 3},
		"revision-gap":                 {found: 2, plainFail: true, kept: 2},
		"generation-backwards":         {found: 3, plainFail: true, kept: 3},
		"crc-fail-claims-old-revision": {found: 5, plainFail: true, kept: 5},
		"two-damaged-lines-tail":       {found: 5, plainFail: true, kept: 5},
		"newer-schema":                 {found: -1, kept: 5},
		"deltas":                       {found: -1, kept: 7},
		"v1-then-v2":                   {found: -1, kept: 7},
		"delta-bad-middle":             {found: 2, plainFail: true, kept: 2},
		"delta-bad-last":               {found: 2, plainFail: true, kept: 2},
		"delta-base-damaged":           {found: 1, plainFail: true, kept: 1},
		"delta-first-record":           {found: 0, plainFail: true, cutFail: true},
		"newer-format":                 {found: 1, plainFail: true, kept: 1},
		"newer-format-v5":              {newer: true},
		"newer-after-deltas":           {newer: true},
		"unknown-kind":                 {newer: true},
		"unknown-kind-built-on":        {newer: true},
		"duplicated-tail-deltas":       {found: 16, plainFail: true, kept: 16},
		"duplicated-tail-full":         {found: 16, plainFail: true, kept: 16},
		"repaired-gap":                 {found: -1, kept: 7, records: 6},
		"v4-blobs":                     {found: -1, kept: 7},
		"v4-pages":                     {found: -1, kept: 25},
		"v4-blob-torn":                 {found: -1, kept: 7},
		"v4-blob-missing":              {found: 2, plainFail: true, kept: 2},
		"v4-blob-damaged":              {found: 2, plainFail: true, kept: 2},
	}
	names := toolFixtureNames(t)
	require.Len(t, names, len(tests))
	for _, name := range names {
		w := tests[name]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, root := toolStore(t, Options{}, name)
			id := session.SessionID(name)
			logFile := filepath.Join(root, name, LogFile)
			data := toolFixture(t, name)
			if w.newer {
				for _, opts := range []maintenance.RepairOptions{{}, {TruncateAtCorruption: true}, {Salvage: true}} {
					_, err := st.Repair(ctx, id, opts)
					require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew, "%+v", opts)
					after, err := os.ReadFile(logFile)
					require.NoError(t, err)
					require.Equal(t, data, after, "a newer version's records are never removed")
				}
				return
			}

			// Without truncation: corruption is reported, and nothing but
			// normal recovery changes.
			rep, err := st.Repair(ctx, id, maintenance.RepairOptions{})
			if w.plainFail {
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.NotNil(t, rep.Found)
				require.Equal(t, toolLineOffset(data, w.found), rep.Found.Offset)
				require.False(t, rep.Cut)
				after, err := os.ReadFile(logFile)
				require.NoError(t, err)
				require.Equal(t, data, after, "corruption is never cut without being asked")
			} else {
				require.NoError(t, err)
				require.Nil(t, rep.Found)
				require.Equal(t, w.kept, rep.Revision)
				require.Equal(t, w.tail, rep.Recovery.TailBytes > 0)
				if w.tail {
					require.Equal(t, rep.Recovery.TailBytes, rep.BytesRemoved)
					require.Equal(t, []string{rep.Recovery.ForensicFile}, rep.ForensicFiles)
				}
			}

			// With truncation.
			before, err := os.ReadFile(logFile)
			require.NoError(t, err)
			rep, err = st.Repair(ctx, id, maintenance.RepairOptions{TruncateAtCorruption: true})
			if w.cutFail {
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				require.Contains(t, err.Error(), "no sound record")
				after, err := os.ReadFile(logFile)
				require.NoError(t, err)
				require.Equal(t, data, after)
				return
			}
			require.NoError(t, err)
			require.Equal(t, w.kept, rep.Revision)
			if w.records == 0 {
				w.records = int(w.kept)
			}
			require.Equal(t, w.records, rep.Records)
			cut := int64(len(before))
			if w.found >= 0 {
				require.NotNil(t, rep.Found)
				require.True(t, rep.Cut)
				cut = toolLineOffset(data, w.found)
				require.Equal(t, cut, rep.CutOffset)
				require.Equal(t, int64(len(data))-cut, rep.BytesRemoved)
				require.Len(t, rep.ForensicFiles, 1)
				kept, err := os.ReadFile(filepath.Join(root, rep.ForensicFiles[0]))
				require.NoError(t, err)
				require.Equal(t, data[cut:], kept, "every removed byte is kept")
			} else {
				require.Nil(t, rep.Found)
				require.False(t, rep.Cut)
				require.Zero(t, rep.BytesRemoved)
			}
			after, err := os.ReadFile(logFile)
			require.NoError(t, err)
			require.Equal(t, data[:cut], after)

			// The session is sound and usable.
			vrep, err := st.Verify(ctx, id)
			require.NoError(t, err)
			require.True(t, vrep.OK(), "%+v", vrep)
			wr, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			defer wr.Release(ctx)
			require.Zero(t, wr.Recovery().TailBytes)
			require.Equal(t, summary.LeaseFree, wr.Recovery().Previous.State, "repair released cleanly")
			rec, err := st.Load(ctx, id)
			require.NoError(t, err)
			require.Equal(t, w.kept, rec.Revision)
			if name == "newer-schema" {
				return
			}
			rev, err := wr.Append(ctx, rec.Revision, rec.Snapshot)
			require.NoError(t, err)
			require.Equal(t, w.kept+1, rev)
		})
	}
}

// TestRepairSummaryEvidence: the last record of a session is damaged and
// summary.json vouches for it, so it is corruption and Acquire refuses the
// session. Repair with truncation frees it: the record goes to forensic/,
// summary.json too, and the session takes appends again.
func TestRepairSummaryEvidence(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := toolSession(t, st, "evid", 5)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	last := toolLineOffset(data, 4)
	toolFlip(t, path, last+40)
	damaged, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = st.TryAcquire(ctx, "evid", sessionstore.AcquireOptions{})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)

	rep, err := st.Repair(ctx, "evid", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Found)
	require.Equal(t, last, rep.Found.Offset)
	require.Equal(t, last, rep.CutOffset)
	require.Equal(t, uint64(4), rep.Revision)
	require.Len(t, rep.ForensicFiles, 2)
	kept, err := os.ReadFile(filepath.Join(st.Dir(), rep.ForensicFiles[0]))
	require.NoError(t, err)
	require.Equal(t, damaged[last:], kept)
	require.Contains(t, rep.ForensicFiles[1], "summary-")
	_, err = os.Stat(filepath.Join(st.Dir(), "evid", SummaryFile))
	require.ErrorIs(t, err, os.ErrNotExist)

	w, err := st.TryAcquire(ctx, "evid", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := st.Load(ctx, "evid")
	require.NoError(t, err)
	require.Equal(t, uint64(4), rec.Revision)
	rev, err := w.Append(ctx, 4, rec.Snapshot)
	require.NoError(t, err)
	require.Equal(t, uint64(5), rev)
	require.NoError(t, w.Release(ctx))
	vrep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, vrep.OK(), "%+v", vrep)
}

// TestRepairSummaryDisagrees: a sound log with a lying summary.json: the
// log stays whole, the summary is moved aside.
func TestRepairSummaryDisagrees(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := toolSession(t, st, "lie", 3)
	sf, ok := logfile.ReadSummary(st.fs, "lie")
	require.True(t, ok)
	sf.Summary.State = session.StateFailed
	b, err := logfile.EncodeSummary(sf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "lie", SummaryFile), b, 0o600))
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = st.Repair(ctx, "lie", maintenance.RepairOptions{})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "lie/"+SummaryFile, ce.Path)

	rep, err := st.Repair(ctx, "lie", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Found)
	require.False(t, rep.Cut)
	require.Zero(t, rep.BytesRemoved)
	require.Len(t, rep.ForensicFiles, 1)
	moved, err := os.ReadFile(filepath.Join(st.Dir(), rep.ForensicFiles[0]))
	require.NoError(t, err)
	require.Equal(t, b, moved)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, data, after)
	vrep, err := st.Verify(ctx)
	require.NoError(t, err)
	require.True(t, vrep.OK(), "%+v", vrep)
}

func TestRepairHeld(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "held", 2)
	w, err := st.Acquire(ctx, "held", sessionstore.AcquireOptions{Label: "busy-agent"})
	require.NoError(t, err)

	_, err = st.Repair(ctx, "held", maintenance.RepairOptions{})
	var he *sessionstore.LeaseHeldError
	require.ErrorAs(t, err, &he)
	require.Equal(t, "busy-agent", he.Status.Holder.Label)

	start := time.Now()
	_, err = st.Repair(ctx, "held", maintenance.RepairOptions{Wait: 100 * time.Millisecond, TruncateAtCorruption: true})
	require.ErrorAs(t, err, &he, "a wait that runs out says who holds the lease")
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	require.Contains(t, err.Error(), "waited 100ms")

	done := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		done <- w.Release(ctx)
	}()
	rep, err := st.Repair(ctx, "held", maintenance.RepairOptions{Wait: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, uint64(2), rep.Revision)
	require.Equal(t, uint64(3), rep.Generation)
	require.Equal(t, summary.LeaseFree, rep.Recovery.Previous.State)

	_, err = st.Repair(ctx, "nope", maintenance.RepairOptions{})
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}

// TestRepairSweepsLeftovers: old temporary and trash directories nobody
// holds are swept; a young one, or one whose lease is held (a creation in
// progress), is left alone.
func TestRepairSweepsLeftovers(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "sess", 1)
	root := st.Dir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, age time.Time) string {
		dir := filepath.Join(root, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(dir, age, age))
		return dir
	}
	mk(".tmp-a-0123456789abcdef", old)
	mk(".trash-b-0123456789abcdef", old)
	mk(".tmp-young-0123456789abcdef", time.Now())
	heldDir := mk(".tmp-held-0123456789abcdef", old)
	l, err := fslease.Acquire(ctx, heldDir, fslease.Options{Label: "creator"})
	require.NoError(t, err)
	defer l.Release(ctx)
	require.NoError(t, os.Chtimes(heldDir, old, old))

	rep, err := st.Repair(ctx, "sess", maintenance.RepairOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{".tmp-a-0123456789abcdef", ".trash-b-0123456789abcdef"}, rep.Swept)
	for name, exists := range map[string]bool{".tmp-a-0123456789abcdef": false, ".trash-b-0123456789abcdef": false, ".tmp-young-0123456789abcdef": true, ".tmp-held-0123456789abcdef": true, "sess": true} {
		_, err := os.Stat(filepath.Join(root, name))
		require.Equal(t, exists, err == nil, name)
	}
}

// TestRepairTwice: a second repair finds nothing to cut, and the log plus
// the forensic file are the original bytes.
func TestRepairTwice(t *testing.T) {
	ctx := context.Background()
	st, root := toolStore(t, Options{}, "bitflip-middle")
	rep, err := st.Repair(ctx, "bitflip-middle", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.NoError(t, err)
	require.True(t, rep.Cut)
	rep2, err := st.Repair(ctx, "bitflip-middle", maintenance.RepairOptions{TruncateAtCorruption: true})
	require.NoError(t, err)
	require.False(t, rep2.Cut, "a repaired log needs no second cut")
	require.Nil(t, rep2.Found)
	require.Equal(t, rep.Revision, rep2.Revision)
	entries, err := os.ReadDir(filepath.Join(root, "bitflip-middle", ForensicDir))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	data := toolFixture(t, "bitflip-middle")
	kept, err := os.ReadFile(filepath.Join(root, "bitflip-middle", ForensicDir, entries[0].Name()))
	require.NoError(t, err)
	log, err := os.ReadFile(filepath.Join(root, "bitflip-middle", LogFile))
	require.NoError(t, err)
	require.Equal(t, data, bytes.Join([][]byte{log, kept}, nil))
}
