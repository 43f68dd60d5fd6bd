package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/sessnap"
)

// TestNext checks every write rule, accepted and refused, and that what
// Next accepts the read side's sequence rules accept too.
func TestNext(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	prevMeta := func(rev, gen uint64, schema int, tm time.Time) Meta {
		return Meta{Version: Version1, Schema: schema, Rev: rev, Gen: gen, Time: tm, Kind: KindFull}
	}
	gap := Meta{Version: Version3, Schema: 1, Rev: 4, Last: 7, Gen: 2, Time: at, Kind: KindGap}
	tests := []struct {
		name     string
		prev     Meta
		expected uint64
		gen      uint64
		now      time.Time
		wantErr  error
		wantMsg  string
		want     Meta
	}{
		{name: "next revision", prev: prevMeta(3, 2, 1, at), expected: 3, gen: 2, now: at.Add(time.Second),
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 2, Time: at.Add(time.Second)}},
		{name: "same time", prev: prevMeta(3, 2, 1, at), expected: 3, gen: 2, now: at,
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 2, Time: at}},
		{name: "clock stepped back keeps the previous time", prev: prevMeta(3, 2, 1, at), expected: 3, gen: 2, now: at.Add(-time.Hour),
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 2, Time: at}},
		{name: "time in another zone is written in UTC", prev: prevMeta(3, 2, 1, at), expected: 3, gen: 2, now: at.Add(time.Second).In(time.FixedZone("X", 3600)),
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 2, Time: at.Add(time.Second)}},
		{name: "a new holder's higher generation", prev: prevMeta(3, 2, 1, at), expected: 3, gen: 5, now: at,
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 5, Time: at}},
		{name: "generation unknown", prev: prevMeta(3, 0, 1, at), expected: 3, gen: 1, now: at,
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 1, Time: at}},
		{name: "after a gap, the revision after its last", prev: gap, expected: 7, gen: 2, now: at,
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 8, Gen: 2, Time: at}},
		{name: "an older schema is appended to", prev: prevMeta(3, 2, sessnap.SchemaVersion-1, at), expected: 3, gen: 2, now: at,
			want: Meta{Schema: sessnap.SchemaVersion, Rev: 4, Gen: 2, Time: at}},

		{name: "stale view", prev: prevMeta(3, 2, 1, at), expected: 2, gen: 2, now: at,
			wantErr: sessionstore.ErrConflict, wantMsg: "sessionstore: conflict: stale expected revision: session s: expected revision 2, latest is 3"},
		{name: "view ahead of the store", prev: prevMeta(3, 2, 1, at), expected: 4, gen: 2, now: at,
			wantErr: sessionstore.ErrConflict, wantMsg: "sessionstore: conflict: stale expected revision: session s: expected revision 4, latest is 3"},
		{name: "expected a gap's first revision", prev: gap, expected: 4, gen: 2, now: at,
			wantErr: sessionstore.ErrConflict, wantMsg: "sessionstore: conflict: stale expected revision: session s: expected revision 4, latest is 7"},
		{name: "newer schema", prev: prevMeta(3, 2, sessnap.SchemaVersion+1, at), expected: 3, gen: 2, now: at,
			wantErr: sessionstore.ErrSchemaTooNew},
		{name: "a later holder wrote the latest", prev: prevMeta(3, 4, 1, at), expected: 3, gen: 3, now: at,
			wantErr: sessionstore.ErrLeaseLost, wantMsg: "sessionstore: lease lost: session s: revision 3 was written by generation 4, after this holder's 3"},
		{name: "conflict is said before the schema", prev: prevMeta(3, 4, sessnap.SchemaVersion+1, at), expected: 1, gen: 3, now: at,
			wantErr: sessionstore.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Next("s", tt.prev, tt.expected, tt.gen, tt.now)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				if tt.wantMsg != "" {
					require.EqualError(t, err, tt.wantMsg)
				}
				require.Equal(t, Meta{}, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, time.UTC, got.Time.Location())
			// The twin: a reader accepts what the writer makes, as a full
			// record or as a delta (after anything but a gap).
			got.Kind, got.Version = KindFull, Version1
			require.NoError(t, After(tt.prev).Check(got), "full record")
			if tt.prev.Kind != KindGap {
				got.Kind, got.Version = KindDelta, Version2
				require.NoError(t, After(tt.prev).Check(got), "delta")
			}
		})
	}
}

// TestFirst checks the first record's envelope: revision 1, this
// program's schema, in UTC, and one the read side accepts first.
func TestFirst(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.FixedZone("X", -7200))
	got := First(3, at)
	require.Equal(t, Meta{Schema: sessnap.SchemaVersion, Rev: 1, Gen: 3, Time: at.UTC()}, got)
	got.Kind, got.Version = KindFull, Version1
	require.NoError(t, (&Seq{}).Check(got))
}

func TestLater(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		t, prev   time.Time
		wantLater time.Time
	}{
		{name: "after", t: at.Add(time.Nanosecond), prev: at, wantLater: at.Add(time.Nanosecond)},
		{name: "equal", t: at, prev: at, wantLater: at},
		{name: "before", t: at.Add(-time.Nanosecond), prev: at, wantLater: at},
		{name: "no previous", t: at, prev: time.Time{}, wantLater: at},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.wantLater, Later(tt.t, tt.prev))
		})
	}
}
