package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
	"github.com/sessionstore/sessionstore/importer/codex"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// statesStore builds a store whose listing is deterministic: sessions in
// every state and of several kinds, written with a fixed clock; one held
// by this process (until the test ends) and one whose holder "died".
func statesStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	var mu sync.Mutex
	clock := goldenClock()
	st, err := jsonlstore.Open(root, jsonlstore.Options{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock()
	}})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for i, state := range []session.State{session.StateIdle, session.StateRunning, session.StateAwaiting,
		session.StateCompleted, session.StateStopped, session.StateCancelled, session.StateFailed} {
		writeSession(t, st, sessiontest.InState(fmt.Sprintf("s%d-%s", i+1, state), state), i%3)
	}
	cfg := sessiontest.Config("s8-subagent")
	cfg.Kind = session.KindSubagent
	s, err := session.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.SetTitle("Résumé: a long title that the table cuts off at thirty-six runes", session.TitleExplicit))
	writeSession(t, st, s, 0)
	cfg = sessiontest.Config("s9-scheduled")
	cfg.Kind = session.KindScheduled
	s, err = session.New(cfg)
	require.NoError(t, err)
	writeSession(t, st, s, 1)

	// Held by this process for the rest of the test.
	snap, err := sessnap.Of(sessiontest.InState("s10-held", session.StateRunning))
	require.NoError(t, err)
	w, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "golden-holder"})
	require.NoError(t, err)
	t.Cleanup(func() { w.Release(ctx) })

	// Stale: the lease record of a holder that never released.
	snap, err = sessnap.Of(sessiontest.InState("s11-stale", session.StateAwaiting))
	require.NoError(t, err)
	w2, err := st.Create(ctx, snap, sessionstore.AcquireOptions{Label: "crashed-agent"})
	require.NoError(t, err)
	leaseFile := filepath.Join(root, "s11-stale", fslease.RecordFile)
	held, err := os.ReadFile(leaseFile)
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx))
	require.NoError(t, os.WriteFile(leaseFile, held, 0o600))
	return root
}

func TestGoldenLs(t *testing.T) {
	root := statesStore(t)
	now := sessiontest.Epoch.Add(time.Hour).Format(time.RFC3339)
	for name, args := range map[string][]string{
		"ls_states":   {"ls", "--time-format", "rfc3339"},
		"ls_relative": {"ls", "--now", now},
		"ls_filter":   {"ls", "--time-format=rfc3339", "--state", "completed,failed", "--state", "awaiting", "--kind", "primary"},
		"ls_page":     {"ls", "--time-format", "rfc3339", "--limit", "4", "--order", "id_asc"},
		"ls_bad":      {"ls", "--state", "sleeping"},
	} {
		t.Run(name, func(t *testing.T) {
			r := sessions(t, nil, append([]string{"--dir", root}, args...)...)
			golden(t, name+".golden", r.String(), hostPID()...)
		})
	}
	// The next page is --page 2, and the page after the cursor of --json's
	// "next" field is the same page.
	r := sessions(t, nil, "--dir", root, "ls", "--time-format", "rfc3339", "--limit", "4", "--order", "id_asc")
	require.Contains(t, r.Stderr, "repeat with --page 2, or --all")
	r = sessions(t, nil, "ls", "--dir", root, "--time-format", "rfc3339", "--limit", "4", "--order", "id_asc", "--page", "2")
	golden(t, "ls_page2.golden", r.String(), hostPID()...)
	r2 := sessions(t, nil, "--dir", root, "ls", "--limit", "4", "--order", "id_asc", "--json")
	var page summary.Page
	require.NoError(t, json.Unmarshal([]byte(r2.Stdout), &page))
	require.NotEmpty(t, page.Next)
	r2 = sessions(t, nil, "ls", "--dir", root, "--time-format", "rfc3339", "--limit", "4", "--order", "id_asc", "--cursor", page.Next)
	require.Equal(t, r.Stdout, r2.Stdout)
	require.Contains(t, r2.Stderr, "repeat with --cursor ", "only a cursor continues a cursor's listing")
	// --all: every session, and no hint.
	r = sessions(t, nil, "ls", "--dir", root, "--time-format", "rfc3339", "--limit", "4", "--order", "id_asc", "--all")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Empty(t, r.Stderr)
	require.Equal(t, 12, strings.Count(r.Stdout, "\n"), "a header and 11 sessions:\n%s", r.Stdout)
	// Past the last page, and listings with nothing to show.
	r = sessions(t, nil, "ls", "--dir", root, "--limit", "4", "--page", "9")
	require.Equal(t, "no more sessions\n", r.Stdout)
	r = sessions(t, nil, "ls", "--dir", root, "--kind", "debug")
	require.Equal(t, "no sessions match\n", r.Stdout)
	r = sessions(t, nil, "ls", "--dir", t.TempDir())
	require.Equal(t, "no sessions\n", r.Stdout)
	require.Equal(t, exitUsage, sessions(t, nil, "ls", "--dir", root, "--page", "2", "--all").Code)
}

func TestGoldenLsJSON(t *testing.T) {
	root := fixtureStore(t)
	r := sessions(t, nil, "ls", "--json", "--dir", root)
	golden(t, "ls_fixtures_json.golden", r.String())
}

func TestGoldenLog(t *testing.T) {
	root := fixtureStore(t)
	for _, name := range []string{"clean", "bitflip-middle", "partial-last-line", "newer-schema"} {
		t.Run(name, func(t *testing.T) {
			r := sessions(t, nil, "--dir", root, "log", name)
			golden(t, "log_"+name+".golden", r.String())
		})
	}
	r := sessions(t, nil, "--dir", root, "log", "clean", "--json")
	require.Equal(t, 0, r.Code)
	golden(t, "log_clean_json.golden", r.String())
}

func TestGoldenVerify(t *testing.T) {
	root := fixtureStore(t)
	r := sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitCorrupt, r.Code)
	golden(t, "verify_fixtures.golden", r.String())

	r = sessions(t, nil, "--dir", root, "verify", "clean", "partial-last-line", "newer-schema")
	require.Equal(t, exitOK, r.Code)
	golden(t, "verify_sound.golden", r.String())

	r = sessions(t, nil, "--dir", root, "verify", "--quiet", "--json", "bitflip-middle")
	require.Equal(t, exitCorrupt, r.Code)
	golden(t, "verify_bitflip_json.golden", r.String())
}

// TestGoldenDeltas: log, verify and export of logs with delta records.
func TestGoldenDeltas(t *testing.T) {
	root := fixtureStore(t, format2Fixtures...)
	r := sessions(t, nil, "--dir", root, "log", "v1-then-v2")
	require.Equal(t, exitOK, r.Code)
	golden(t, "log_v1-then-v2.golden", r.String())
	r = sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitCorrupt, r.Code)
	golden(t, "verify_deltas.golden", r.String())
	r = sessions(t, nil, "--dir", root, "export", "deltas", "--latest")
	require.Equal(t, exitOK, r.Code)
	golden(t, "export_deltas_latest.golden", r.String())
}

func TestGoldenDu(t *testing.T) {
	root := fixtureStore(t, "clean", "nul-tail", "bitflip-middle")
	r := sessions(t, nil, "--dir", root, "du", "--bytes")
	golden(t, "du_bytes.golden", r.String())
	r = sessions(t, nil, "--dir", root, "du", "nul-tail")
	golden(t, "du_human.golden", r.String())
}

// TestGoldenHostileExports: show and export of the hostile session
// (importtest), whose content imitates each form's structure: the
// Markdown and the text keep one header per message and the session's
// facts on their own lines, and the exports import again to the same
// messages with the same roles. The golden files are the forms as
// written, for a reader to see what is kept and how.
func TestGoldenHostileExports(t *testing.T) {
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	s := importtest.HostileSession(t, importtest.HostileMessages())
	writeSession(t, st, s, 0)
	require.NoError(t, st.Close())

	for _, format := range []string{"markdown", "text"} {
		r := sessions(t, nil, "--dir", root, "show", "hostile", "--format", format)
		require.Equal(t, exitOK, r.Code, r.String())
		golden(t, "show_hostile_"+format+".golden", r.Stdout)
	}
	for _, format := range []string{"claude-code", "codex"} {
		r := sessions(t, nil, "--dir", root, "export", "hostile", "--format", format)
		require.Equal(t, exitOK, r.Code, r.String())
		golden(t, "export_hostile_"+format+".golden", r.Stdout)
		var tr *importer.Transcript
		if format == "codex" {
			tr, err = codex.Parse(strings.NewReader(r.Stdout), codex.Options{})
		} else {
			tr, err = claudecode.Parse(strings.NewReader(r.Stdout), claudecode.Options{})
		}
		require.NoError(t, err)
		require.Len(t, tr.Messages, s.MessageCount(), format)
		for i, m := range s.Conversation() {
			require.Equal(t, m.Role, tr.Messages[i].Role, "%s: message %d", format, i)
			require.Equal(t, importer.Text(m.Parts), importer.Text(tr.Messages[i].Parts), "%s: message %d", format, i)
		}
		require.Equal(t, importtest.HostileTitle, tr.Title, format)
	}
}
