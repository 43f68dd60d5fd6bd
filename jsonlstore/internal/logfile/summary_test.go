package logfile

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// TestSummaryEncoderMatches: a writer's summary encoder writes the bytes
// EncodeSummary writes, whichever fields change from one summary to
// the next, those it encodes anew and the others.
func TestSummaryEncoderMatches(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	sf := SummaryFile{
		Log: vfs.Identity{Dev: 2049, Ino: 1234}, LogSize: 5120, LogMtime: at.UnixNano(), LastOffset: 4000, Revision: 7,
		Summary: summary.Summary{
			ID: "s1", Title: "a <title> & more", State: session.StateIdle, Kind: session.KindPrimary, Mode: session.ModeDefault,
			CreatedAt: at, UpdatedAt: at, Revision: 7, Generation: 1, MessageCount: 3,
			Labels: map[string]string{"team": "one"}, Sizes: summary.Sizes{LogBytes: 5120},
			Lease: summary.LeaseStatus{State: summary.LeaseHeld},
		},
	}
	var e summaryEncoder
	for _, c := range []struct {
		name   string
		change func(*SummaryFile)
	}{
		{"first", func(*SummaryFile) {}},
		{"same", func(*SummaryFile) {}},
		{"an append", func(sf *SummaryFile) {
			sf.LogSize += 165
			sf.LastOffset += 165
			sf.LogMtime += 1000
			sf.Revision++
			sf.Summary.Revision++
			sf.Summary.MessageCount++
			sf.Summary.UpdatedAt = sf.Summary.UpdatedAt.Add(time.Second)
			sf.Summary.Sizes.LogBytes += 165
		}},
		{"a bigger log", func(sf *SummaryFile) { sf.LogSize, sf.Summary.Sizes.LogBytes = 1<<40, 1<<40 }},
		{"counters and usage", func(sf *SummaryFile) {
			sf.Summary.Counters.Turns = 4
			sf.Summary.Usage.OutputTokens = 99
		}},
		{"archive", func(sf *SummaryFile) { sf.Summary.Sizes.ArchiveBytes = 77 }},
		{"generation", func(sf *SummaryFile) { sf.Summary.Generation = 2 }},
		{"no mtime", func(sf *SummaryFile) { sf.LogMtime = 0 }},
		{"mtime again", func(sf *SummaryFile) { sf.LogMtime = at.UnixNano() }},
		{"labels", func(sf *SummaryFile) { sf.Summary.Labels = map[string]string{"team": "two"} }},
		{"title", func(sf *SummaryFile) { sf.Summary.Title = "" }},
		{"origin", func(sf *SummaryFile) { sf.Summary.Origin = &session.Origin{Tool: "codex", SessionID: "x"} }},
		{"another log", func(sf *SummaryFile) { sf.Log.Ino++ }},
		{"time zone", func(sf *SummaryFile) { sf.Summary.UpdatedAt = sf.Summary.UpdatedAt.In(time.FixedZone("X", 3600)) }},
	} {
		c.change(&sf)
		want, err := EncodeSummary(sf)
		require.NoError(t, err)
		got, err := e.encode(sf)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), c.name)
		if c.name == "labels" {
			sf.Summary.Labels["team"] = "three" // changed in place: the encoder kept its own
			want, _ := EncodeSummary(sf)
			got, _ := e.encode(sf)
			require.Equal(t, string(want), string(got), "labels changed in place")
		}
	}
}

// TestSummaryEncoderFields: every field of a summary is either compared
// by sameStable or encoded anew by the encoder, so that a field added
// later is not written stale.
func TestSummaryEncoderFields(t *testing.T) {
	known := map[string][]string{
		"SummaryFile": {"Version", "Log", "LogMtime", "LogSize", "LastOffset", "Revision", "Summary"},
		"Summary": {"ID", "Title", "TitleProvenance", "State", "StopReason", "Kind", "ParentID", "Mode", "ProviderID",
			"ModelID", "CreatedAt", "LastError", "Owner", "Labels", "Project", "Dir", "Branch", "Origin", "Lease",
			"UpdatedAt", "Revision", "Generation", "MessageCount", "Counters", "Usage", "Sizes"},
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[SummaryFile](), reflect.TypeFor[summary.Summary]()} {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		require.ElementsMatch(t, known[typ.Name()], got, "%s: a field neither compared nor encoded anew", typ.Name())
	}
}

// TestEvidenceAsDecodeSummary: what Evidence reads of a summary.json
// (decodeEvidence, its own members only) is evidence exactly when the
// whole summary decodes as such (DecodeSummary), and says the same.
func TestEvidenceAsDecodeSummary(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	base := SummaryFile{
		Log: vfs.Identity{Dev: 2049, Ino: 1234}, LogSize: 5120, LogMtime: at.UnixNano(), LastOffset: 4000, Revision: 7,
		Summary: summary.Summary{ID: "s1", Title: "t", State: session.StateIdle, CreatedAt: at, UpdatedAt: at,
			Revision: 7, Generation: 1, MessageCount: 3, Labels: map[string]string{"team": "one"}},
	}
	frame := func(sf SummaryFile) []byte {
		b, err := record.Frame(sf)
		require.NoError(t, err)
		return b
	}
	current, err := EncodeSummary(base)
	require.NoError(t, err)
	v1 := base
	v1.Version, v1.LogMtime = 1, 0
	v3 := base
	v3.Version = SummaryVersion + 1
	noRev := base
	noRev.Revision, noRev.Summary.Revision = 0, 0
	otherRev := base
	otherRev.Summary.Revision = 6
	otherID := base
	otherID.Summary.ID = "s2"
	torn := bytes.Clone(current)
	torn[len(torn)/2] ^= 1
	for name, b := range map[string][]byte{
		"current": current, "padded": append(bytes.Clone(current), "   "...), "version 1": frame(v1),
		"newer version": frame(v3), "no revision": frame(noRev), "revisions differ": frame(otherRev),
		"another session": frame(otherID), "torn": torn, "empty": nil, "not JSON": []byte("{"),
	} {
		sf, want := DecodeSummary(b, "s1")
		ev, got := decodeEvidence(b, "s1")
		require.Equal(t, want, got, name)
		require.Equal(t, name == "current" || name == "padded" || name == "version 1", got, name)
		if want {
			require.Equal(t, []any{sf.Log, sf.LogSize, sf.LastOffset, sf.Revision}, []any{ev.Log, ev.LogSize, ev.LastOffset, ev.Revision}, name)
		}
	}
}
