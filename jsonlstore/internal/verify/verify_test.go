package verify

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/roottest"
	"github.com/sessionstore/sessionstore/session"
)

// The tests here drive Verify's check of a session through its gate
// alone; the whole store's Verify runs, with its crash, kill and fault
// suites, in package jsonlstore.

// gate is the facade's check as the readers need it: a closed store, a
// done context, an invalid ID.
func gate(closed bool) logfile.Gate {
	return func(ctx context.Context, id session.SessionID) error {
		if closed {
			return sessionstore.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return sessionstore.ValidateID(id)
	}
}

// TestVerifySession: a sound log verifies with its records counted; a
// record damaged in the middle is a problem at its offset; a closed store
// (the host's word) checks nothing.
func TestVerifySession(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("v1")
	root, log := roottest.New(t, id, 4)
	st := New(root, gate(false))
	sr, err := st.Session(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 4, sr.Records)
	require.Equal(t, uint64(4), sr.Revision)
	require.Empty(t, sr.Problems)
	require.Empty(t, sr.Notes)

	// A byte of revision 2's payload flipped: revisions 3 and 4 follow it,
	// so it is corruption, not a tail.
	off := log.Offsets[1]
	damaged := append([]byte(nil), log.Bytes...)
	damaged[(off+log.Offsets[2])/2] ^= 0x01
	require.NoError(t, os.WriteFile(st.root.Abs(layout.LogPath(id)), damaged, layout.FilePerm))
	sr, err = st.Session(ctx, id, false)
	require.NoError(t, err)
	require.Len(t, sr.Problems, 1, "%+v", sr)
	require.Equal(t, int64(off), sr.Problems[0].Offset)
	require.Equal(t, uint64(2), sr.Problems[0].Revision)
	require.Equal(t, 1, sr.Records)

	closed := New(st.root, gate(true))
	_, err = closed.Session(ctx, id, false)
	require.ErrorIs(t, err, sessionstore.ErrClosed)
}
