package listing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestWatchSummaryKeys: decoding only the ranking fields of summary.json
// accepts exactly what decodeSummaryFile accepts, with the same values.
func TestWatchSummaryKeys(t *testing.T) {
	sum := summary.Summary{
		ID: "k", Title: "a title", State: session.StateStopped, Kind: session.KindSubagent, ParentID: "p",
		CreatedAt: sessiontest.Epoch, UpdatedAt: sessiontest.Epoch.Add(time.Hour), Revision: 7, Generation: 2,
	}
	sf := logfile.SummaryFile{Log: vfs.Identity{Dev: 1, Ino: 2}, LogSize: 5000, LastOffset: 4000, Revision: 7, Summary: sum}
	good, err := logfile.EncodeSummary(sf)
	require.NoError(t, err)
	reencode := func(f func(*logfile.SummaryFile)) []byte {
		c := sf
		f(&c)
		b, err := logfile.EncodeSummary(c)
		require.NoError(t, err)
		return b
	}
	flipped := append([]byte(nil), good...)
	flipped[20] ^= 1
	cases := []struct {
		name   string
		b      []byte
		id     session.SessionID
		wantOK bool
	}{
		{"good", good, "k", true},
		{"padded", append(append([]byte(nil), good...), "      "...), "k", true},
		{"other session", good, "j", false},
		{"torn", good[:len(good)-5], "k", false},
		{"empty", nil, "k", false},
		{"flipped bit", flipped, "k", false},
		{"revision zero", reencode(func(f *logfile.SummaryFile) { f.Revision, f.Summary.Revision = 0, 0 }), "k", false},
		{"revisions disagree", reencode(func(f *logfile.SummaryFile) { f.Summary.Revision = 6 }), "k", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full, okFull := logfile.DecodeSummary(c.b, c.id)
			keys, okKeys := decodeSummaryKeys(c.b, c.id)
			require.Equal(t, c.wantOK, okFull)
			require.Equal(t, okFull, okKeys)
			if !okKeys {
				return
			}
			require.Equal(t, full.Log, keys.Log)
			require.Equal(t, full.LogSize, keys.LogSize)
			r := keys.ranked()
			require.True(t, sameRank(&full.Summary, &r))
			require.Equal(t, full.Revision, r.Revision)
		})
	}
}
