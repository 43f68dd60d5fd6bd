package jsonlstore

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
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

// TestScanParallelSameAsSerial: over a store of many sessions with many
// secrets (inline, in blobs, in pages and archives, retired), a scan on
// many workers gives exactly the findings, in exactly the order, of a
// scan on one.
func TestScanParallelSameAsSerial(t *testing.T) {
	ctx := t.Context()
	st := openTestStoreWith(t, purgeOptions(t, true))
	for i := range 8 {
		makeLeakySession(t, st, session.SessionID(fmt.Sprintf("leak%d", i)), 6+3*i)
	}
	_, err := st.Retire(ctx, maintenance.RetireOptions{IDs: []session.SessionID{"leak3", "leak6"}})
	require.NoError(t, err)

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	serial := scanAll(t, st)
	require.Greater(t, len(serial), 8*4)
	runtime.GOMAXPROCS(8)
	for range 5 {
		require.Equal(t, serial, scanAll(t, st))
	}
	ids := []session.SessionID{"leak5", "leak1", "leak6"}
	runtime.GOMAXPROCS(1)
	want := scanAll(t, st, ids...)
	runtime.GOMAXPROCS(8)
	require.Equal(t, want, scanAll(t, st, ids...), "the order of the IDs given")
}

// TestScanSharedBlob: one tool output, kept as one blob, named by many
// messages of many revisions and by a fork (whose blobs/ links the
// parent's file), holding a secret: the scan reports the secret at every
// message that holds it (each at the first revision that does, as the
// scan through History does), and reads the blob's file no more often
// than when one message names it.
func TestScanSharedBlob(t *testing.T) {
	ctx := t.Context()
	output := strings.Repeat("AWS_ACCESS_KEY_ID="+purgeAWS+" line\n", 300)
	hash := blob.Hash([]byte(output))
	reads := func(names int, fork bool) ([]sessionstore.SecretFinding, []sessionstore.SecretFinding, int) {
		dir := t.TempDir()
		root, err := os.OpenRoot(dir)
		require.NoError(t, err)
		defer root.Close()
		faulty := vfs.NewFaulty(vfs.OS(root))
		st := newStore(dir, root, faulty, fsLeaser{}, purgeOptions(t, true))
		defer st.Close()
		s := sessiontest.New("shared")
		w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
		require.NoError(t, err)
		for i := range names {
			require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: fmt.Sprintf("c%d", i), Output: output}}}))
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleAssistant, fmt.Sprintf("ok %d", i), sessiontest.Epoch)))
			_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
			require.NoError(t, err)
		}
		require.NoError(t, w.Release(ctx))
		if fork {
			fw, err := st.Fork(ctx, "shared", 0, "forked", sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, fw.Release(ctx))
		}
		n := 0
		faulty.Inject(vfs.Fault{Op: vfs.OpRead, Times: -1, Match: func(name string) bool {
			if strings.Contains(name, hash) {
				n++
			}
			return false // counts, never fires
		}})
		got := scanAll(t, st)
		faulty.Clear()
		return got, scanAll(t, historyOnly{st}), n
	}
	got1, want1, reads1 := reads(1, false)
	require.Equal(t, placesOf(want1), placesOf(got1))
	require.Len(t, got1, 1)
	got, want, readsMany := reads(12, true)
	require.Equal(t, placesOf(want), placesOf(got))
	for _, id := range []session.SessionID{"shared", "forked"} {
		var msgs []int
		for _, f := range got {
			if f.ID == id {
				msgs = append(msgs, f.Message)
			}
		}
		require.Len(t, msgs, 12, "%s: one finding per message that names the blob", id)
	}
	require.Positive(t, reads1)
	require.LessOrEqual(t, readsMany, 2*reads1, "the blob's file: looked at once, read once per session to say where")
	t.Logf("reads of the blob's file: %d for one message, %d for 12 and a fork", reads1, readsMany)
}
