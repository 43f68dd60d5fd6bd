package sessionstore_test

import (
	"errors"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// seqOf yields a snapshot of each id in turn, then err if there is one.
func seqOf(err error, ids ...session.SessionID) iter.Seq2[sessnap.Snapshot, error] {
	return func(yield func(sessnap.Snapshot, error) bool) {
		for _, id := range ids {
			if !yield(sessnap.Snapshot{ID: id}, nil) {
				return
			}
		}
		if err != nil {
			yield(sessnap.Snapshot{}, err)
		}
	}
}

func TestHistoryReader(t *testing.T) {
	errSeq := errors.New("the sequence's own")
	tests := []struct {
		name     string
		snaps    iter.Seq2[sessnap.Snapshot, error]
		wantRead []session.SessionID // the snapshots read before the end or the error
		wantIs   error               // nil: the history ends without an error
		wantMsg  string
	}{
		{name: "one", snaps: seqOf(nil, "a"), wantRead: []session.SessionID{"a"}},
		{name: "three", snaps: seqOf(nil, "a", "a", "a"), wantRead: []session.SessionID{"a", "a", "a"}},
		{name: "empty", snaps: seqOf(nil), wantIs: sessionstore.ErrInvalidSnapshot,
			wantMsg: "sessionstore: invalid snapshot: an empty history"},
		{name: "error first", snaps: seqOf(errSeq), wantIs: errSeq},
		{name: "error later", snaps: seqOf(errSeq, "a", "a"), wantRead: []session.SessionID{"a", "a"}, wantIs: errSeq},
		{name: "another session", snaps: seqOf(nil, "a", "a", "b", "a"), wantRead: []session.SessionID{"a", "a"},
			wantIs: sessionstore.ErrInvalidSnapshot, wantMsg: `sessionstore: invalid snapshot: snapshot of session "b" in the history of a`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sessionstore.PullHistory(tt.snaps)
			defer h.Stop()
			var read []session.SessionID
			snap, err := h.First()
			for err == nil {
				read = append(read, snap.ID)
				var more bool
				if snap, more, err = h.Next(); err == nil && !more {
					break
				}
			}
			require.Equal(t, tt.wantRead, read)
			if tt.wantIs == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantIs)
			if tt.wantMsg != "" {
				require.EqualError(t, err, tt.wantMsg)
			}
		})
	}
}

func TestHistoryReaderStopEndsTheSequence(t *testing.T) {
	stopped := false
	h := sessionstore.PullHistory(func(yield func(sessnap.Snapshot, error) bool) {
		defer func() { stopped = true }()
		for yield(sessnap.Snapshot{ID: "a"}, nil) {
		}
	})
	_, err := h.First()
	require.NoError(t, err)
	h.Stop()
	require.True(t, stopped)
}
