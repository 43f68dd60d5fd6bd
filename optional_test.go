package sessionstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// memWith returns a memstore holding sessions ids, session i with i+1
// revisions, all released.
func memWith(t *testing.T, ids ...string) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = st.Close() })
	for i, id := range ids {
		s := sessiontest.New(id)
		snap, err := sessnap.Of(s)
		require.NoError(t, err)
		w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for rev := range uint64(i) {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "more", sessiontest.Epoch)))
			snap, err := sessnap.Of(s)
			require.NoError(t, err)
			_, err = w.Append(ctx, rev+1, snap)
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
	}
	return st
}

// plain is a store with none of the optional interfaces: the Store
// interface embedded hides its adapter's other methods.
type plain struct{ sessionstore.Store }

// TestFallbacks: a store without the optional interfaces (memstore, its
// own hidden) is verified, listed and exported from its History.
func TestFallbacks(t *testing.T) {
	ctx := context.Background()
	st := plain{memWith(t, "a", "b", "c")}

	ids, err := st.IDs(ctx) // memstore's, through the embedded Store
	require.NoError(t, err)
	require.Equal(t, []session.SessionID{"a", "b", "c"}, ids)

	rep, err := sessionstore.Verify(ctx, st)
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, rep.Sessions, 3)
	require.Equal(t, sessionstore.SessionVerifyReport{ID: "c", Records: 3, Revision: 3}, rep.Sessions[2])
	_, err = sessionstore.Verify(ctx, st, "nosuch")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
	_, err = sessionstore.Verify(ctx, st, "../x")
	require.ErrorIs(t, err, sessionstore.ErrInvalidID)

	var revs []uint64
	for info, err := range sessionstore.Records(ctx, st, "c") {
		require.NoError(t, err)
		require.Positive(t, info.Bytes)
		revs = append(revs, info.Revision)
	}
	require.Equal(t, []uint64{1, 2, 3}, revs)

	var out bytes.Buffer
	require.NoError(t, sessionstore.Export(ctx, st, "c", &out, false))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	for i, l := range lines {
		var el sessionstore.ExportLine
		require.NoError(t, json.Unmarshal([]byte(l), &el))
		require.Equal(t, uint64(i+1), el.Revision)
		require.True(t, strings.HasPrefix(l, `{"revision":`), "keys in the contract's order")
	}
	out.Reset()
	require.NoError(t, sessionstore.Export(ctx, st, "c", &out, true))
	var snap sessnap.Snapshot
	require.NoError(t, json.Unmarshal(out.Bytes(), &snap))
	require.Len(t, snap.Messages, 2)
	require.True(t, strings.HasPrefix(out.String(), "{\n  \""), "indented")
}

// verifying is a memstore whose VerifyWith reports a problem: the helper
// uses an adapter's own method when it has one.
type verifying struct{ *memstore.Store }

func (verifying) VerifyWith(context.Context, sessionstore.VerifyOptions, ...session.SessionID) (sessionstore.VerifyReport, error) {
	return sessionstore.VerifyReport{Sessions: []sessionstore.SessionVerifyReport{
		{ID: "a", Problems: []sessionstore.Finding{{File: "a/log.jsonl", Message: "made up"}}},
	}}, nil
}

func TestVerifyUsesTheAdapters(t *testing.T) {
	rep, err := sessionstore.VerifyWith(context.Background(), verifying{memWith(t, "a")}, sessionstore.VerifyOptions{Deep: true})
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Equal(t, 1, rep.ProblemCount())
	require.Equal(t, "a/log.jsonl offset 0: made up", rep.Sessions[0].Problems[0].String())
}

func TestResolveID(t *testing.T) {
	ctx := context.Background()
	st := memWith(t, "01KB3C0ZJ6AAAA", "01KB3C0ZJ6AAAB", "01KB3C1XYZ", "s1-idle")
	for _, tc := range []struct {
		name, arg string
		want      session.SessionID
		wantErr   error
	}{
		{"exact", "s1-idle", "s1-idle", nil},
		{"unique prefix", "01KB3C1", "01KB3C1XYZ", nil},
		{"lower case", "01kb3c1xyz", "01KB3C1XYZ", nil},
		{"lower-case prefix", "01kb3c0zj6aaab", "01KB3C0ZJ6AAAB", nil},
		{"ambiguous", "01kb3c0", "", sessionstore.ErrAmbiguousID},
		{"none", "02", "", sessionstore.ErrNotFound},
		{"invalid", "../etc", "", sessionstore.ErrInvalidID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sessionstore.ResolveID(ctx, st, tc.arg)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := sessionstore.ResolveID(ctx, st, "01KB3C0")
	var ae *sessionstore.AmbiguousIDError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, []session.SessionID{"01KB3C0ZJ6AAAA", "01KB3C0ZJ6AAAB"}, ae.Candidates)
	require.ErrorContains(t, err, "01KB3C0ZJ6AAAA, 01KB3C0ZJ6AAAB")
}

// TestAcquireWithin: no wait is TryAcquire; a wait returns the lease
// once the holder lets go within it, or, when the holder keeps it, the
// *LeaseHeldError that says who (not the deadline); the caller's own
// context ending stays its error.
func TestAcquireWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memWith(t, "s")
		holder, err := st.Acquire(ctx, "s", sessionstore.AcquireOptions{Label: "holder"})
		require.NoError(t, err)

		start := time.Now()
		_, err = sessionstore.AcquireWithin(ctx, st, "s", sessionstore.AcquireOptions{}, 0)
		var he *sessionstore.LeaseHeldError
		require.ErrorAs(t, err, &he)
		require.Equal(t, time.Duration(0), time.Since(start), "no wait")

		_, err = sessionstore.AcquireWithin(ctx, st, "s", sessionstore.AcquireOptions{}, time.Minute)
		require.ErrorAs(t, err, &he)
		require.Equal(t, "holder", he.Status.Holder.Label)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "the holder, not the deadline")
		require.Equal(t, time.Minute, time.Since(start))

		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = sessionstore.AcquireWithin(cctx, st, "s", sessionstore.AcquireOptions{}, time.Minute)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "the caller's own deadline")

		go func() {
			time.Sleep(10 * time.Second)
			_ = holder.Release(ctx) // if it fails, the wait below runs out and the test fails
		}()
		w, err := sessionstore.AcquireWithin(ctx, st, "s", sessionstore.AcquireOptions{}, time.Minute)
		require.NoError(t, err)
		require.Equal(t, time.Minute+time.Second+10*time.Second, time.Since(start))
		require.NoError(t, w.Release(ctx))
	})
}

func TestSessionUsageAdd(t *testing.T) {
	var u sessionstore.SessionUsage
	u.Add(sessionstore.SessionUsage{ID: "a", LogBytes: 1, ArchiveBytes: 2, ForensicBytes: 3, BlobBytes: 4, OtherBytes: 5, TotalBytes: 15})
	u.Add(sessionstore.SessionUsage{ID: "b", BlobBytes: 10, TotalBytes: 10})
	require.Equal(t, sessionstore.SessionUsage{LogBytes: 1, ArchiveBytes: 2, ForensicBytes: 3, BlobBytes: 14, OtherBytes: 5, TotalBytes: 25}, u)
}

// TestSearchAndDiskUsage: the functions kept from when searching and
// reporting usage were optional answer as the store's own methods do.
func TestSearchAndDiskUsage(t *testing.T) {
	ctx := context.Background()
	st := memWith(t, "a", "b")
	q := sessionstore.SearchQuery{Text: "more"}
	want, err := st.Search(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, want.Hits)
	got, err := sessionstore.Search(ctx, st, q)
	require.NoError(t, err)
	require.Equal(t, want, got)
	_, err = sessionstore.Search(ctx, st, sessionstore.SearchQuery{})
	require.ErrorIs(t, err, sessionstore.ErrBadQuery)

	wantDU, err := st.DiskUsage(ctx)
	require.NoError(t, err)
	gotDU, err := sessionstore.DiskUsage(ctx, st)
	require.NoError(t, err)
	require.Equal(t, wantDU, gotDU)
	require.Len(t, gotDU.Sessions, 2)
}
