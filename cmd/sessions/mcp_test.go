package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestMCP runs the built `sessions mcp` as an MCP client starts it, over
// its standard input and output, on the store searchStore makes: the
// command opens the store as the others do, answers the tools, says what
// fails as a tool error, and ends when the client closes its end.
func TestMCP(t *testing.T) {
	ctx := context.Background()
	dir := searchStore(t)
	cmd := exec.Command(filepath.Join(binDir, "sessions"), "mcp", "--dir", dir)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "test"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": `"flaky test"`, "project": "/src/app"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, `"session":"s-tool"`)
	require.Contains(t, text, "«flaky test»")
	require.NotContains(t, text, "s-evil", "the project filter holds")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_session", Arguments: map[string]any{"id": "s-ev"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	got := res.Content[0].(*mcp.TextContent).Text
	show := sessions(t, nil, "--dir", dir, "show", "s-evil", "--format", "markdown")
	require.Equal(t, exitOK, show.Code, show.Stderr)
	require.Equal(t, show.Stdout, got, "read_session is show --format markdown")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_message", Arguments: map[string]any{"id": "s-nope", "index": 0}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, `no session "s-nope"`)

	require.NoError(t, cs.Close(), "closing stdin ends the command, with status 0")
	require.Empty(t, stderr.String())
}

// TestMCPNoStore checks that `sessions mcp` on a missing store fails as
// the other commands do, creating nothing.
func TestMCPNoStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	r := sessions(t, nil, "--dir", missing, "mcp")
	require.Equal(t, exitFail, r.Code)
	require.Contains(t, r.Stderr, "use --dir, or set SESSIONSTORE_DIR")
	require.NoDirExists(t, missing)
}
