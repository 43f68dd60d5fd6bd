package jsonlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

func TestRecords(t *testing.T) {
	ctx := context.Background()
	st, _ := toolStore(t, Options{}, "clean", "bitflip-middle", "crc-fail-last-line")
	for name, want := range map[string]struct {
		n       int
		errLine int // -1: none
	}{
		"clean":              {5, -1},
		"bitflip-middle":     {2, 2},
		"crc-fail-last-line": {5, -1},
	} {
		data := toolFixture(t, name)
		var infos []sessionstore.RecordInfo
		var rerr error
		for info, err := range st.Records(ctx, session.SessionID(name)) {
			if err != nil {
				rerr = err
				break
			}
			infos = append(infos, info)
		}
		require.Len(t, infos, want.n, name)
		var off int64
		for i, info := range infos {
			require.Equal(t, uint64(i+1), info.Revision)
			require.Equal(t, record.KindFull, info.Kind)
			require.Equal(t, name+"/"+LogFile, info.File)
			require.Equal(t, off, info.Offset)
			require.Equal(t, toolLineOffset(data, i+1)-off, info.Bytes)
			require.Less(t, int64(info.PayloadBytes), info.Bytes)
			off += info.Bytes
		}
		if want.errLine < 0 {
			require.NoError(t, rerr, name)
			continue
		}
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, rerr, &ce, name)
		require.Equal(t, toolLineOffset(data, want.errLine), ce.Offset)
	}

	// Stopping early is fine.
	n := 0
	for _, err := range st.Records(ctx, "clean") {
		require.NoError(t, err)
		n++
		break
	}
	require.Equal(t, 1, n)
}

// TestRecordLines: the lines RecordLines yields are the stored bytes —
// for full and delta records, and for archived revisions after a
// compaction — and a damaged record ends them with the corruption error.
func TestRecordLines(t *testing.T) {
	ctx := context.Background()
	st, _ := toolStore(t, Options{}, "clean", "deltas", "v1-then-v2", "crc-fail-last-line", "bitflip-middle")
	lines := func(id session.SessionID) ([]byte, error) {
		var all []byte
		for line, err := range st.RecordLines(ctx, id) {
			if err != nil {
				return all, err
			}
			all = append(all, line...)
		}
		return all, nil
	}
	for _, name := range []string{"clean", "deltas", "v1-then-v2"} {
		got, err := lines(session.SessionID(name))
		require.NoError(t, err, name)
		require.Equal(t, string(toolFixture(t, name)), string(got), name)
	}
	// An uncommitted tail is not a record.
	got, err := lines("crc-fail-last-line")
	require.NoError(t, err)
	data := toolFixture(t, "crc-fail-last-line")
	require.Equal(t, string(data[:toolLineOffset(data, 5)]), string(got))
	// A damaged record followed by valid ones ends the sequence.
	got, err = lines("bitflip-middle")
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	data = toolFixture(t, "bitflip-middle")
	require.Equal(t, string(data[:toolLineOffset(data, 2)]), string(got))

	// After a compaction, archived revisions come first, byte for byte.
	before, err := lines("deltas")
	require.NoError(t, err)
	rep, err := st.Compact(ctx, "deltas", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	require.Positive(t, rep.RevisionsTrimmed)
	after, err := lines("deltas")
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
}
