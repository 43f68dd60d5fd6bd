package storetest

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// growing returns the snapshots of a conversation of n messages, one
// more per revision, as an import yields them: the session changed in
// place and captured after each step. One message holds large content
// (an adapter that keeps content out of line does so inside the history).
func growing(t *testing.T, id string, n int) []sessnap.Snapshot {
	t.Helper()
	s, err := session.New(sessiontest.Config(id))
	require.NoError(t, err)
	var out []sessnap.Snapshot
	for i := range n {
		at := sessiontest.Epoch.Add(time.Duration(i) * time.Second)
		text := fmt.Sprintf("message %d", i)
		if i == n/2 {
			text += strings.Repeat(" and more", 8<<10) // 72 KiB
		}
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, at)))
		out = append(out, sessiontest.Snap(t, s))
	}
	return out
}

// seqOf yields snaps, then err (when not nil).
func seqOf(snaps []sessnap.Snapshot, err error) iter.Seq2[sessnap.Snapshot, error] {
	return func(yield func(sessnap.Snapshot, error) bool) {
		for _, s := range snaps {
			if !yield(s, nil) {
				return
			}
		}
		if err != nil {
			yield(sessnap.Snapshot{}, err)
		}
	}
}

func checkCreateHistory(f *fixture) {
	t := f.t
	snaps := growing(t, "hist", 40)
	w, err := sessionstore.CreateHistory(f.ctx, f.s, seqOf(snaps, nil), sessionstore.AcquireOptions{Label: "importer"})
	require.NoError(t, err)
	f.track(w)
	require.Equal(t, session.SessionID("hist"), w.ID())
	require.Equal(t, uint64(len(snaps)), w.Revision(), "the writer is at the last revision")

	hist := f.history("hist")
	require.Len(t, hist, len(snaps))
	for i, rec := range hist {
		require.Equal(t, uint64(i+1), rec.Revision)
		require.Equal(t, w.Generation(), rec.Generation)
		if i > 0 {
			require.False(t, rec.Time.Before(hist[i-1].Time), "record times never go back")
		}
		requireSameSnap(t, snaps[i], rec.Snapshot, "revision %d", i+1)
	}
	require.Equal(t, summary.LeaseHeld, f.lease("hist").State, "the creator holds the lease")
	_, err = f.s.TryAcquire(f.ctx, "hist", sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrLeaseHeld)
	items := f.listAll(summary.Query{})
	require.Len(t, items, 1)
	require.Equal(t, uint64(len(snaps)), items[0].Revision)
	require.Equal(t, len(snaps), items[0].MessageCount)

	// The writer goes on from the last revision, and another holder after it.
	more := growing(t, "hist", len(snaps)+1)
	f.append(w, uint64(len(snaps)), more[len(snaps)])
	require.NoError(t, w.Release(f.ctx))
	w2 := f.acquire("hist", "next")
	f.append(w2, uint64(len(snaps)+1), stepSnap(t, "hist", 1))

	// A history of one revision is a Create.
	w3, err := sessionstore.CreateHistory(f.ctx, f.s, seqOf(growing(t, "one", 1), nil), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	f.track(w3)
	require.Equal(t, uint64(1), w3.Revision())
	require.Len(t, f.history("one"), 1)
}

func checkCreateHistoryRefused(f *fixture) {
	t := f.t
	boom := errors.New("the source failed")
	bad := growing(t, "bad", 3)
	bad[2].State = "sleeping" // does not restore
	other := growing(t, "mixed", 3)
	other[2].ID = "someone-else"
	f.create("taken")
	before := f.load("taken")
	tests := []struct {
		name    string
		id      session.SessionID
		snaps   iter.Seq2[sessnap.Snapshot, error]
		wantErr error
	}{
		{"empty", "", seqOf(nil, nil), sessionstore.ErrInvalidSnapshot},
		{"error first", "", seqOf(nil, boom), boom},
		{"error part way", "partial", seqOf(growing(t, "partial", 4), boom), boom},
		{"invalid revision", "bad", seqOf(bad, nil), sessionstore.ErrInvalidSnapshot},
		{"another session's snapshot", "mixed", seqOf(other, nil), sessionstore.ErrInvalidSnapshot},
		{"existing", "taken", seqOf(growing(t, "taken", 3), nil), sessionstore.ErrExists},
		{"invalid ID", "", seqOf(growing(t, "x/y", 2), nil), sessionstore.ErrInvalidID},
	}
	for _, tt := range tests {
		w, err := sessionstore.CreateHistory(f.ctx, f.s, tt.snaps, sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, tt.wantErr, tt.name)
		require.Nil(t, w, tt.name)
		if tt.id != "" && tt.id != "taken" {
			_, err = f.s.Load(f.ctx, tt.id)
			require.ErrorIs(t, err, sessionstore.ErrNotFound, "%s: a refused history left a session behind", tt.name)
		}
	}
	require.Equal(t, []string{"taken"}, ids(f.listAll(summary.Query{})), "nothing but the existing session")
	requireSameSnap(t, before.Snapshot, f.load("taken").Snapshot, "a refused history changed an existing session")
}
