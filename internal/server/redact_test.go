package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fake key in a valid format (no one's).
const serveKey = "AKIA" + "VW3ER5TY7UI2OP4E"

// TestServeRedacts: what an agent sends through sessions serve is stored
// with its secrets replaced (the store redacts every write), so that
// neither reading the items back nor a search gives the key.
func TestServeRedacts(t *testing.T) {
	ts := startServer(t, Options{})
	id, h := ts.create()
	ts.must(http.StatusOK, "POST", path("/v1/sessions/%s/items", id), map[string]any{"handle": h, "items": []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"deploy with ` + serveKey + ` please"}`),
	}})
	a := ts.must(http.StatusOK, "GET", path("/v1/sessions/%s/items", id), nil)
	require.NotContains(t, string(a.raw), serveKey)
	require.Contains(t, string(a.raw), "[REDACTED:aws-access-key-id:")
	res := ts.must(http.StatusOK, "GET", "/v1/search?q="+serveKey, nil)
	require.Empty(t, res.body["hits"], "%s", res.raw)
}
