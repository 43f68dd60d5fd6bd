package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Tail recovery under arbitrary damage: a real store is built in a
// temporary directory from a committed fixture log, the log is damaged
// (bytes appended, bytes flipped, or cut and appended to), and the session
// is loaded, read in full, verified and acquired. Whatever happens:
//
//   - nothing panics, and every error is a clear one (a *CorruptionError
//     for damage);
//   - nothing is returned that is not a complete, checksum-valid line of
//     the damaged file (no record is made up or glued together);
//   - recovery removes only the bytes after the last valid line, and keeps
//     them in a forensic file; a refused recovery changes nothing;
//   - whatever loads re-encodes stably.

// fuzzMaxRecord is the record cap of the fuzzed stores: small, so that
// the fuzzer can reach it.
const fuzzMaxRecord = 16 << 10

// fixtureLogs returns the committed fixture logs, by name, in name order.
func fixtureLogs(tb testing.TB) (names []string, logs [][]byte) {
	tb.Helper()
	entries, err := os.ReadDir(fixtureRoot)
	require.NoError(tb, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureRoot, e.Name(), LogFile))
		require.NoError(tb, err)
		names = append(names, e.Name())
		logs = append(logs, b)
	}
	return names, logs
}

// Damage operations of FuzzTailRecovery.
const (
	damageAppend  = iota // append junk
	damageFlip           // xor junk into the log at an offset
	damageCutThen        // cut the log at an offset, then append junk
	damageOverlay        // overwrite the log from an offset with junk
	damageOps
)

// damage applies op to log and returns the damaged log and the offset of
// the first byte that may differ from log.
func damage(log []byte, op uint8, at uint32, junk []byte) ([]byte, int) {
	out := bytes.Clone(log)
	off := 0
	if len(log) > 0 {
		off = int(at) % (len(log) + 1)
	}
	switch op % damageOps {
	case damageAppend:
		return append(out, junk...), len(log)
	case damageFlip:
		for i, b := range junk {
			if off+i < len(out) {
				out[off+i] ^= b
			}
		}
	case damageCutThen:
		out = append(out[:off], junk...)
	case damageOverlay:
		out = append(out[:off], junk...)
		if len(out) < len(log) {
			out = append(out, log[len(out):]...)
		}
	}
	return out, off
}

// validLines returns the complete, checksum-valid lines of data (what a
// writer could have written) and the offset just past the last one.
func validLines(data []byte, maxPayload int) (recs []record.Rec, lastEnd int64) {
	var off int64
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return recs, lastEnd
		}
		if r, err := parseLine(data[off:off+int64(i)], maxPayload); err == nil {
			r.Offset, r.LineLen = off, int64(i)+1
			r.Payload = bytes.Clone(r.Payload)
			recs = append(recs, r)
			lastEnd = r.End()
		}
		off += int64(i) + 1
	}
}

// validSnapshots returns the snapshot each of valid (validLines) holds:
// a full record's payload, or a delta applied to the snapshot of the
// valid line just before it when that line is the previous revision; nil
// when a delta has no such base or does not apply.
func validSnapshots(valid []record.Rec) [][]byte {
	snaps := make([][]byte, len(valid))
	for i, r := range valid {
		switch r.Kind {
		case record.KindFull:
			snaps[i] = r.Payload
		case record.KindDelta:
			if i == 0 || snaps[i-1] == nil || valid[i-1].Rev+1 != r.Rev {
				continue
			}
			if snap, err := record.Apply(snaps[i-1], r.Payload, fuzzMaxRecord); err == nil {
				snaps[i] = snap
			}
		}
	}
	return snaps
}

// FuzzTailRecovery's seeds (every fixture, each with a set of damages)
// run in every `go test`; `make fuzz` explores from them.
func FuzzTailRecovery(f *testing.F) {
	names, logs := fixtureLogs(f)
	clean := slices.Index(names, "clean")
	require.GreaterOrEqual(f, clean, 0)
	lines := bytes.SplitAfter(logs[clean], []byte("\n"))
	for i := range logs {
		f.Add(uint8(i), uint8(damageAppend), uint32(0), []byte{})
		f.Add(uint8(i), uint8(damageAppend), uint32(0), make([]byte, 4096))
		f.Add(uint8(i), uint8(damageAppend), uint32(0), lines[1])
		f.Add(uint8(i), uint8(damageFlip), uint32(len(logs[i])/2), []byte{0x04})
		f.Add(uint8(i), uint8(damageCutThen), uint32(len(logs[i])-10), []byte("\n"))
		f.Add(uint8(i), uint8(damageOverlay), uint32(len(logs[i])/3), lines[0])
		f.Add(uint8(i), uint8(damageAppend), uint32(0), []byte(`{"v":1,"sch`))
		f.Add(uint8(i), uint8(damageFlip), uint32(len(logs[i])-20), []byte{0x01})
		f.Add(uint8(i), uint8(damageCutThen), uint32(len(logs[i])-1), []byte{})
	}
	f.Fuzz(func(t *testing.T, which uint8, op uint8, at uint32, junk []byte) {
		i := int(which) % len(logs)
		name := names[i]
		data, dmg := damage(logs[i], op, at, junk)
		checkRecovery(t, name, logs[i], data, dmg)
	})
}

// checkRecovery opens a store holding data as session id's log and checks
// the invariants above. orig is the log before damage at offset dmg.
func checkRecovery(t *testing.T, name string, orig, data []byte, dmg int) {
	ctx := context.Background()
	id := session.SessionID(name)
	root := t.TempDir()
	dir := filepath.Join(root, name)
	logFile := filepath.Join(dir, LogFile)
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(logFile, data, 0o600))
	st, err := Open(root, Options{MaxRecordBytes: fuzzMaxRecord})
	require.NoError(t, err)
	defer st.Close()

	valid, lastEnd := validLines(data, fuzzMaxRecord)
	snaps := validSnapshots(valid)
	written := func(rec sessionstore.Record) {
		t.Helper()
		got, err := sessnap.Marshal(rec.Snapshot)
		require.NoError(t, err, "a loaded snapshot re-encodes")
		for i, r := range valid {
			if r.Rev != rec.Revision || r.Gen != rec.Generation || !r.Time.Equal(rec.Time) || snaps[i] == nil {
				continue
			}
			snap, err := sessnap.Unmarshal(snaps[i])
			if err != nil {
				continue
			}
			want, err := sessnap.Marshal(snap)
			if err == nil && bytes.Equal(want, got) {
				again, err := sessnap.Unmarshal(got)
				require.NoError(t, err)
				stable, err := sessnap.Marshal(again)
				require.NoError(t, err)
				require.Equal(t, string(got), string(stable), "re-encoding is stable")
				return
			}
		}
		t.Fatalf("revision %d was returned but no valid line of the log holds it", rec.Revision)
	}
	clearErr := func(what string, err error) {
		t.Helper()
		var ce *sessionstore.CorruptionError
		var ne *sessionstore.NewerRecordError
		if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, sessionstore.ErrNotFound) {
			return
		}
		t.Fatalf("%s: unclear error %T: %v", what, err, err)
	}

	// Readers: never panic, never make up a record, never modify.
	rec, loadErr := st.Load(ctx, id)
	if loadErr == nil {
		written(rec)
	} else {
		clearErr("load", loadErr)
	}
	next := uint64(1)
	for rec, err := range st.History(ctx, id) {
		var ge *sessionstore.GapError
		if errors.As(err, &ge) {
			require.Equal(t, next, ge.First, "a gap where the next revision is due")
			next = ge.Last + 1
			continue
		}
		if err != nil {
			clearErr("history", err)
			break
		}
		require.Equal(t, next, rec.Revision, "history is in order without gaps")
		written(rec)
		next++
	}
	_, err = st.Verify(ctx, id)
	require.NoError(t, err, "verify reports damage, it does not fail on it")
	after, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, data, after, "readers never modify the log")

	// Recovery: removes exactly the bytes after the last valid line, and
	// keeps them; or refuses and changes nothing.
	w, err := st.Acquire(ctx, id, sessionstore.AcquireOptions{})
	after, rerr := os.ReadFile(logFile)
	require.NoError(t, rerr)
	if err != nil {
		clearErr("acquire", err)
		require.Equal(t, data, after, "a refused recovery changes nothing")
		return
	}
	defer w.Release(ctx)
	rep := w.Recovery()
	require.Equal(t, string(data[:lastEnd]), string(after), "recovery keeps every valid line (damage at %d)", dmg)
	if committed := committedBefore(orig, dmg); int64(len(after)) < committed {
		t.Fatalf("recovery cut the log to %d bytes; records committed before the damage at %d end at %d", len(after), dmg, committed)
	}
	if rep.TailBytes > 0 {
		require.Equal(t, lastEnd, rep.TailOffset)
		saved, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rep.ForensicFile)))
		require.NoError(t, err)
		require.Equal(t, data[lastEnd:], saved, "removed bytes are kept in the forensic file")
	} else {
		require.Equal(t, int64(len(data)), lastEnd)
	}

	// The holder carries on from the last valid record. (A last record
	// that does not decode, e.g. a valid line of another session, fails to
	// load before and after alike.)
	last, err := st.Load(ctx, id)
	if err != nil {
		clearErr("load after recovery", err)
		require.Error(t, loadErr, "the latest revision loaded before recovery but not after: %v", err)
		return
	}
	require.Equal(t, w.Revision(), last.Revision)
	written(last)
	rev, err := w.Append(ctx, last.Revision, last.Snapshot)
	if errors.Is(err, sessionstore.ErrSchemaTooNew) || errors.Is(err, sessionstore.ErrInvalidSnapshot) {
		return
	}
	require.NoError(t, err)
	require.Equal(t, last.Revision+1, rev)
	again, err := st.Load(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rev, again.Revision)
}

// committedBefore returns the end of the last valid line of orig that lies
// wholly before offset dmg: recovery may never cut below it.
func committedBefore(orig []byte, dmg int) int64 {
	_, end := validLines(orig[:dmg], fuzzMaxRecord)
	return end
}
