package jsonlstore_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Fake secrets in valid formats (not anyone's keys).
const (
	redactGitHub = "ghp_" + "Wq3Xv8Lm2Pw5Rt9Ny4Bk7Hd1Fs6Gj0Ca3UeQ"
	redactAWS    = "AKIA" + "ZW3ER5TY7UI2OP4B"
)

// TestRedactNoSecretInAnyFile: after a session whose title, prompt, tool
// input and large tool output (a blob) hold secrets is created, appended
// to, compacted and indexed for search, no file under the store's root
// holds a byte of them: not the log, the blobs, the summary, the catalog,
// the search index or the archives.
func TestRedactNoSecretInAnyFile(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{Search: fts.New()})
	require.NoError(t, err)
	defer st.Close()

	s := sessiontest.New("leaky")
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartText, Text: "deploy with " + redactAWS + " and " + redactGitHub},
	}}))
	snap := sessiontest.Snap(t, s)
	snap.Title = "deploy with " + redactAWS
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	input, err := json.Marshal(map[string]string{"cmd": "gh auth login --with-token " + redactGitHub})
	require.NoError(t, err)
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleAssistant, Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "bash", Input: input},
	}}))
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Output: strings.Repeat("AWS_ACCESS_KEY_ID="+redactAWS+"\n", 2000)},
	}}))
	for range 3 {
		snap := sessiontest.Snap(t, s)
		snap.Title = "deploy with " + redactAWS
		_, err = w.Append(ctx, w.Revision(), snap)
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	_, err = st.Compact(ctx, "leaky", maintenance.CompactPolicy{KeepLast: 1}, 0)
	require.NoError(t, err)
	require.NoError(t, st.FlushSearch(ctx))
	res, err := st.Search(ctx, sessionstore.SearchQuery{Text: redactAWS})
	require.NoError(t, err)
	require.Empty(t, res.Hits)
	res, err = st.Search(ctx, sessionstore.SearchQuery{Text: "deploy"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits, "the rest of the message is indexed")
	require.NoError(t, st.Close())

	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, secret := range []string{redactAWS, redactGitHub, redactGitHub[4:24]} {
			require.False(t, bytes.Contains(b, []byte(secret)), "%s holds a secret", path)
		}
		return nil
	}))
	require.Greater(t, files, 5)
}
