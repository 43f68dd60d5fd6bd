package jsonlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
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
		var infos []RecordInfo
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
			require.Equal(t, KindFull, info.Kind)
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
