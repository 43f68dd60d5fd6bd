package jsonlstore

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// historyOnly hides a store's own scan and its record lines, so that
// sessionstore.Scan reads it through History: the reference the store's
// scan is held to.
type historyOnly struct{ sessionstore.Store }

func scanAll(t *testing.T, st sessionstore.Store, ids ...session.SessionID) []sessionstore.SecretFinding {
	t.Helper()
	var out []sessionstore.SecretFinding
	for f, err := range sessionstore.Scan(t.Context(), st, redact.Default(), ids...) {
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

// placesOf drops where a finding is (which the reference does not say).
func placesOf(fs []sessionstore.SecretFinding) []sessionstore.SecretFinding {
	var out []sessionstore.SecretFinding
	for _, f := range fs {
		if f.Where == sessionstore.WhereForensic || f.Where == sessionstore.WhereRetired+" "+sessionstore.WhereForensic {
			continue
		}
		f.Where = ""
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b sessionstore.SecretFinding) int {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return slices.Compare(x, y)
	})
	return out
}

// TestScanEverywhere: secrets planted in a live session's log, its
// archive segments, its blobs and pages and a forensic copy, and in a
// retired session (its pack, forensic copy included) are all reported,
// each with where it is; the places (session, revision, message, part,
// field, rule, hash) are those a scan through History finds; no finding
// holds a byte of a secret; an ID names a retired session as well as a
// live one, an unknown ID is not found; after a redaction nothing is
// left to report.
func TestScanEverywhere(t *testing.T) {
	ctx := t.Context()
	st := openTestStoreWith(t, purgeOptions(t, true))
	makeLeakySession(t, st, "leaky", 30)
	makeLeakySession(t, st, "gone", 12)
	makeLeakySession(t, st, "clean", 3)
	_, err := st.Redact(ctx, []session.SessionID{"clean"}, redact.Default(), 0)
	require.NoError(t, err)

	wantLeaky := placesOf(scanAll(t, historyOnly{st}, "leaky"))
	wantGone := placesOf(scanAll(t, historyOnly{st}, "gone"))
	require.NotEmpty(t, wantLeaky)
	_, err = st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{"gone"}})
	require.NoError(t, err)

	got := scanAll(t, st)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	for _, secret := range purgeSecrets {
		require.NotContains(t, string(b), secret)
	}
	where := map[string]map[session.SessionID]int{}
	var leaky, gone []sessionstore.SecretFinding
	for _, f := range got {
		if where[f.Where] == nil {
			where[f.Where] = map[session.SessionID]int{}
		}
		where[f.Where][f.ID]++
		switch f.ID {
		case "leaky":
			leaky = append(leaky, f)
		case "gone":
			gone = append(gone, f)
		default:
			t.Fatalf("a finding in %s: %+v", f.ID, f)
		}
		if f.Where == sessionstore.WhereForensic {
			require.Contains(t, f.File, "forensic/")
			require.Equal(t, -1, f.Message)
		}
	}
	t.Logf("%v", where)
	require.Positive(t, where[sessionstore.WhereLog]["leaky"])
	require.Positive(t, where[sessionstore.WhereArchive]["leaky"])
	require.Positive(t, where[sessionstore.WhereForensic]["leaky"])
	require.Positive(t, where[sessionstore.WhereRetired]["gone"])
	require.Positive(t, where[sessionstore.WhereRetired+" "+sessionstore.WhereForensic]["gone"])
	require.Equal(t, wantLeaky, placesOf(leaky))
	require.Equal(t, wantGone, placesOf(gone))
	require.Equal(t, gone, scanAll(t, st, "gone"), "an ID names a retired session")

	for _, err := range sessionstore.Scan(ctx, st, redact.Default(), "nope") {
		require.ErrorIs(t, err, sessionstore.ErrNotFound)
	}

	_, err = st.Redact(ctx, []session.SessionID{"leaky"}, redact.Default(), 0)
	require.NoError(t, err)
	require.Empty(t, scanAll(t, st, "leaky"))
}
