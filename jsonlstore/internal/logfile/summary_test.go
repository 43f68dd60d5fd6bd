package logfile

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
