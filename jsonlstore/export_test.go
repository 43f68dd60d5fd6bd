package jsonlstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/sessnap"
)

func TestExport(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "exp", 4)

	var out bytes.Buffer
	require.NoError(t, st.Export(ctx, "exp", &out, false))
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var l sessionstore.ExportLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		require.True(t, strings.HasPrefix(sc.Text(), `{"revision":`), "keys in the documented order")
		rec, err := st.LoadRevision(ctx, "exp", uint64(n))
		require.NoError(t, err)
		require.Equal(t, rec.Revision, l.Revision)
		require.Equal(t, rec.Generation, l.Generation)
		require.True(t, rec.Time.Equal(l.Time))
		require.Equal(t, sessnap.SchemaVersion, l.Schema)
		want, err := sessnap.Marshal(rec.Snapshot)
		require.NoError(t, err)
		require.Equal(t, string(want), string(l.Snapshot), "the stored payload, byte for byte")
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 4, n)

	out.Reset()
	require.NoError(t, st.Export(ctx, "exp", &out, true))
	latest, err := st.Load(ctx, "exp")
	require.NoError(t, err)
	var got sessnap.Snapshot
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, latest.Snapshot.Messages, got.Messages)
	require.Contains(t, out.String(), "\n  \"id\": \"exp\"", "indented")
	require.True(t, strings.HasSuffix(out.String(), "}\n"))
}

// TestExportInterrupted: an export of every revision stops when its
// context is done, after the revisions it wrote, each whole.
func TestExportInterrupted(t *testing.T) {
	st := openTestStore(t)
	toolSession(t, st, "exp", 6)
	ctx, cancel := context.WithCancel(context.Background())
	w := &cancelAfter{n: 2, cancel: cancel}
	err := st.Export(ctx, "exp", w, false)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 2, strings.Count(w.b.String(), "\n"), "the lines written until it was cancelled, and none after")
}

// cancelAfter cancels after n writes.
type cancelAfter struct {
	b      bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	if w.n--; w.n <= 0 {
		w.cancel()
	}
	return w.b.Write(p)
}

func TestExportFixtures(t *testing.T) {
	ctx := context.Background()
	st, _ := toolStore(t, Options{}, "bitflip-middle", "partial-last-line", "newer-schema")

	// A corrupt record: the revisions before it, then the error.
	var out bytes.Buffer
	err := st.Export(ctx, "bitflip-middle", &out, false)
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, toolLineOffset(toolFixture(t, "bitflip-middle"), 2), ce.Offset)
	require.Equal(t, 2, strings.Count(out.String(), "\n"))
	out.Reset()
	require.NoError(t, st.Export(ctx, "bitflip-middle", &out, true), "the latest revision is sound")

	// An uncommitted tail is not part of the history.
	out.Reset()
	require.NoError(t, st.Export(ctx, "partial-last-line", &out, false))
	require.Equal(t, 5, strings.Count(out.String(), "\n"))

	// A newer writer's unknown keys survive.
	out.Reset()
	require.NoError(t, st.Export(ctx, "newer-schema", &out, false))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5)
	require.Contains(t, lines[4], `"schema":99`)
	require.Contains(t, lines[4], `"future_field":{"x":1}`)

	require.ErrorIs(t, st.Export(ctx, "nope", &out, false), sessionstore.ErrNotFound)
}
