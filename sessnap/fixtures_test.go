package sessnap_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var update = flag.Bool("update", false, "write the canonical fixtures that do not exist yet (committed ones are frozen and never rewritten)")

const fixtureDir = "../testdata/sessnap"

// canonical fixtures are generated from builders and must re-encode to
// identical bytes; the others are hand-written shapes.
var canonical = map[string]func() *session.Session{
	"idle.json":      func() *session.Session { return sessiontest.InState("01JDCANONIDLE", session.StateIdle) },
	"running.json":   func() *session.Session { return sessiontest.InState("01JDCANONRUNNING", session.StateRunning) },
	"awaiting.json":  func() *session.Session { return sessiontest.InState("01JDCANONAWAITING", session.StateAwaiting) },
	"completed.json": func() *session.Session { return sessiontest.InState("01JDCANONCOMPLETED", session.StateCompleted) },
	"stopped.json":   func() *session.Session { return sessiontest.InState("01JDCANONSTOPPED", session.StateStopped) },
	"cancelled.json": func() *session.Session { return sessiontest.InState("01JDCANONCANCELLED", session.StateCancelled) },
	"failed.json":    func() *session.Session { return sessiontest.InState("01JDCANONFAILED", session.StateFailed) },
	"full.json":      fullSession,
	// Schema 2.
	"v2_full.json":             fullSessionV2,
	"v2_labels_workspace.json": labelledSession,
	// Schema 3.
	"v3_content_refs.json": contentRefSession,
	// Schema 4.
	"v4_fork_at_message.json": forkAtMessageSession,
}

// forkAtMessageSession is a fork at a message: its relationship names the
// parent and the last message taken from it, and its messages keep their
// IDs.
func forkAtMessageSession() *session.Session {
	cfg := sessiontest.Config("01JDCANONV4FORK")
	cfg.Relationship = session.SessionRelationship{ParentID: "01JDPARENT", RootID: "01JDPARENT", ForkedAt: "msg_b"}
	s, err := session.New(cfg)
	must(err)
	must(s.AppendMessage(session.Message{ID: "msg_a", Role: session.RoleUser, CreatedAt: sessiontest.Epoch,
		Parts: []session.Part{{Type: session.PartText, Text: "Refactor the parser"}}}))
	must(s.AppendMessage(session.Message{ID: "msg_b", Role: session.RoleAssistant, CreatedAt: sessiontest.Epoch,
		Parts: []session.Part{{Type: session.PartText, Text: "Done."}}}))
	must(s.SetTitle("Refactor the parser", session.TitleFirstPrompt))
	return s
}

// contentRefSession holds parts whose content is kept out of line (as a
// store loads it without the content): a text, a tool output, an image.
func contentRefSession() *session.Session {
	s := sessiontest.InState("01JDCANONV3REFS", session.StateIdle)
	ref := func(field, hash string, size int64) *session.ContentRef {
		return &session.ContentRef{Field: field, SHA256: hash, Size: size}
	}
	must(s.AppendMessage(session.Message{Role: session.RoleUser, CreatedAt: sessiontest.Epoch, Parts: []session.Part{
		{Type: session.PartText, Ref: ref(session.ContentText, "a591a6d40bf420404a011733cfb7b190d62c65bf0bcda32b57b277d9ad9f146e", 11)},
		{Type: session.PartImage, MediaType: "image/png", Ref: ref(session.ContentData, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", 5)},
	}}))
	must(s.AppendMessage(session.Message{Role: session.RoleTool, CreatedAt: sessiontest.Epoch, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Ref: ref(session.ContentOutput, "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7", 5)},
	}}))
	return s
}

// fullSession sets every optional field, so the fixture shows every key.
func fullSession() *session.Session {
	cfg := sessiontest.Config("01JDCANONFULL")
	cfg.Incarnation = "inc-7"
	cfg.Mode = session.ModeAcceptEdits
	cfg.Kind = session.KindSubagent
	cfg.Limits = session.Limits{MaxTurns: 10, MaxToolCalls: 100, MaxRunTokens: 500000, MaxDurationMS: 3_600_000}
	cfg.Relationship = session.SessionRelationship{ParentID: "01JDPARENT", RootID: "01JDROOT", Role: "reviewer"}
	cfg.Profile = "coding"
	cfg.ReasoningEffort = "high"
	cfg.DebugMCPServers = []string{"github", "jira"}
	cfg.DebugMCPTools = []string{"github.search", "jira.get"}
	cfg.DebugTargetFingerprint = "sha256:ab12"
	cfg.Placement = session.PlacementMetadata{Host: "laptop", Region: "eu-west", Labels: map[string]string{"team": "tools", "env": "dev"}}
	cfg.Authority = &session.Authority{Capabilities: []string{session.CapCommandsRun, session.CapFilesRead, session.CapFilesWrite}}
	s, err := session.New(cfg)
	if err != nil {
		panic(err)
	}
	at := sessiontest.Epoch
	must(s.RestoreLabels(&session.Principal{Subject: "user:42", Issuer: "https://id.example", DisplayName: "Ada <ada@example.com>"}))
	must(s.SetTitle("Review PR #7", session.TitleExplicit))
	must(s.SetRunID("run-77"))
	must(s.AppendMessage(session.Message{Role: session.RoleSystem, Parts: []session.Part{{Type: session.PartText, Text: "You review code."}}}))
	must(s.AppendMessage(session.Message{Role: session.RoleUser, CreatedAt: at, Parts: []session.Part{
		{Type: session.PartText, Text: "Look at this screenshot — ünïcødé & <html>"},
		{Type: session.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 0xff}},
	}}))
	must(s.BeginTurn())
	must(s.AppendMessage(session.Message{Role: session.RoleAssistant, ProviderPhase: "final", CreatedAt: at.Add(1), Parts: []session.Part{
		{Type: session.PartToolCall, ToolCallID: "c1", Name: "grep", Input: json.RawMessage(`{"pattern":"TODO","n":9007199254740993}`)},
	}}))
	must(s.RecordToolCall())
	must(s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Output: "no matches", IsError: true},
		{Type: session.PartBlob, MediaType: "application/gzip", Data: []byte{0x1f, 0x8b}},
	}}))
	must(s.AddUsage(session.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}))
	must(s.PrepareRetry(session.RetryRetryable, session.ProgressNone))
	return s
}

// TestFixtures decodes every fixture under testdata/sessnap and checks the
// outcome the table promises: the state it restores to, or the error.
func TestFixtures(t *testing.T) {
	if *update {
		for name, build := range canonical {
			path := filepath.Join(fixtureDir, name)
			if _, err := os.Stat(path); err == nil {
				continue // frozen: a fixture once committed is never rewritten
			}
			b, err := sessnap.Encode(build())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		}
	}
	tests := []struct {
		file      string
		wantState session.State
		wantErr   error
		check     func(t *testing.T, s *session.Session)
	}{
		{file: "idle.json", wantState: session.StateIdle},
		{file: "running.json", wantState: session.StateRunning},
		{file: "awaiting.json", wantState: session.StateAwaiting, check: func(t *testing.T, s *session.Session) {
			ask, err := s.PendingAsk()
			require.NoError(t, err)
			require.Equal(t, "ask-1", ask.ID)
			require.JSONEq(t, `{"path":"parser.go","bytes":2048}`, string(ask.Input))
		}},
		{file: "completed.json", wantState: session.StateCompleted, check: stopIs(session.StopCompleted)},
		{file: "stopped.json", wantState: session.StateStopped, check: stopIs(session.StopMaxTurns)},
		{file: "cancelled.json", wantState: session.StateCancelled, check: stopIs(session.StopCancelled)},
		{file: "failed.json", wantState: session.StateFailed, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, session.StopError, s.RecordedStopReason())
			require.True(t, s.Permanent())
			require.Equal(t, "model stream: connection reset after 3 retries", s.LastError())
			d, p := s.RetryFacts()
			require.Equal(t, session.RetryNotRetryable, d)
			require.Equal(t, session.ProgressPartial, p)
		}},
		{file: "full.json", wantState: session.StateRunning, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, session.KindSubagent, s.Kind())
			require.Equal(t, "user:42", s.Owner().Subject)
			require.Equal(t, []string{"commands.run", "files.read", "files.write"}, s.Authority().Capabilities)
			pending, d, _ := s.RetryPending()
			require.True(t, pending)
			require.Equal(t, session.RetryRetryable, d)
			require.Equal(t, session.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, s.Usage())
			// A big integer inside raw tool input survives untouched.
			require.Contains(t, string(s.Conversation()[2].Parts[0].Input), "9007199254740993")
		}},
		{file: "legacy_v1_minimal.json", wantState: session.StateIdle, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, session.KindUnknown, s.Kind(), "missing kind restores as unknown")
			require.Equal(t, session.ModeDefault, s.Mode(), "missing mode restores as default")
			require.True(t, s.Usage().IsZero(), "missing usage restores as zero")
			require.Nil(t, s.Owner(), "missing owner restores as none")
			require.Nil(t, s.Authority(), "missing authority is legacy")
			require.Equal(t, 0, s.MessageCount(), "missing messages restore as empty")
			require.Nil(t, s.Labels(), "missing labels restore as none")
			require.True(t, s.Workspace().IsZero(), "a missing workspace restores as empty")
			require.Nil(t, s.Origin(), "a missing origin means not imported")
		}},
		{file: "legacy_v1_running.json", wantState: session.StateRunning, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, session.KindUnknown, s.Kind())
			require.Equal(t, int64(3), s.Counters().Turns, "counters survive the replayed BeginTurn")
			title, prov := s.Title()
			require.Equal(t, "old title", title)
			require.Equal(t, session.TitleProvenance(""), prov, "a legacy title without provenance keeps none")
		}},
		{file: "legacy_v1_failed_no_stop.json", wantState: session.StateFailed, check: stopIs(session.StopError)},
		{file: "newer_writer_unknown_keys.json", wantState: session.StateAwaiting, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, 2, s.MessageCount())
		}},
		// Schema 2.
		{file: "v2_full.json", wantState: session.StateRunning, check: checkFullV2},
		{file: "v2_labels_workspace.json", wantState: session.StateIdle, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, map[string]string{"project": "app", "priority": "high"}, s.Labels())
			require.Equal(t, session.Workspace{Project: "/home/ada/src/app", Dir: "/home/ada/src/app", Branch: "main"}, s.Workspace())
			require.Nil(t, s.Origin(), "a session that was not imported has no origin")
		}},
		{file: "newer_writer_v3_unknown_keys.json", wantState: session.StateRunning, check: checkFullV2},
		{file: "v3_content_refs.json", wantState: session.StateIdle, check: func(t *testing.T, s *session.Session) {
			conv := s.Conversation()
			n := len(conv)
			require.Equal(t, &session.ContentRef{Field: session.ContentText, SHA256: "a591a6d40bf420404a011733cfb7b190d62c65bf0bcda32b57b277d9ad9f146e", Size: 11}, conv[n-2].Parts[0].Ref)
			require.Empty(t, conv[n-2].Parts[0].Text, "the content is out of line")
			require.Equal(t, session.ContentData, conv[n-2].Parts[1].Ref.Field)
			require.Equal(t, session.ContentOutput, conv[n-1].Parts[0].Ref.Field)
		}},
		{file: "v4_fork_at_message.json", wantState: session.StateIdle, check: func(t *testing.T, s *session.Session) {
			require.Equal(t, session.SessionRelationship{ParentID: "01JDPARENT", RootID: "01JDPARENT", ForkedAt: "msg_b"}, s.Relationship())
			require.Equal(t, "msg_b", session.MessageIDAt(s.Conversation(), 1))
		}},
		{file: "invalid_v2_label_key.json", wantErr: session.ErrInvalid},
		{file: "invalid_v2_too_many_labels.json", wantErr: session.ErrInvalid},
		{file: "invalid_v2_wrong_type_labels.json", wantErr: sessnap.ErrMalformed},
		{file: "invalid_v2_origin_without_session_id.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_v2_duplicate_message_id.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_v2_signature_on_text.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_v2_nested_tool_call.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_v2_compaction_trigger.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_unknown_state.json", wantErr: sessnap.ErrUnknownState},
		{file: "invalid_authority_unknown_capability.json", wantErr: sessnap.ErrInvalidAuthority},
		{file: "invalid_authority_empty.json", wantErr: sessnap.ErrInvalidAuthority},
		{file: "invalid_authority_duplicate.json", wantErr: sessnap.ErrInvalidAuthority},
		{file: "invalid_missing_environment_ref.json", wantErr: sessnap.ErrInvalidEnvironmentRef},
		{file: "invalid_incomplete_environment_ref.json", wantErr: sessnap.ErrInvalidEnvironmentRef},
		{file: "invalid_wrong_type_counter.json", wantErr: sessnap.ErrMalformed},
		{file: "invalid_wrong_type_messages.json", wantErr: sessnap.ErrMalformed},
		{file: "invalid_awaiting_without_pending.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_stopped_without_reason.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_stop_reason_on_running.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_unknown_kind.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_unknown_role.json", wantErr: sessnap.ErrInvalid},
		{file: "invalid_future_format.json", wantErr: sessnap.ErrUnsupportedFormat},
		{file: "invalid_utf8.json", wantErr: sessnap.ErrMalformed},
		{file: "invalid_missing_id.json", wantErr: sessnap.ErrInvalid},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtureDir, tt.file))
			require.NoError(t, err)
			s, err := sessnap.Decode(data)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, s)
				t.Logf("error (as users see it): %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantState, s.State())
			if tt.check != nil {
				tt.check(t, s)
			}
			again, err := sessnap.Encode(s)
			require.NoError(t, err)
			if build, ok := canonical[tt.file]; ok {
				require.Equal(t, string(trimNL(data)), string(again), "canonical fixture must re-encode to identical bytes")
				fresh, err := sessnap.Encode(build())
				require.NoError(t, err)
				require.Equal(t, string(trimNL(data)), string(fresh), "builder no longer produces the fixture; fixtures are frozen, add a new one")
			}
			// Whatever decodes re-encodes stably.
			s2, err := sessnap.Decode(again)
			require.NoError(t, err)
			again2, err := sessnap.Encode(s2)
			require.NoError(t, err)
			require.Equal(t, string(again), string(again2))
		})
	}
	entries, err := os.ReadDir(fixtureDir)
	require.NoError(t, err)
	for _, e := range entries {
		require.True(t, seen[e.Name()], "fixture %s has no row in the table", e.Name())
	}
	require.GreaterOrEqual(t, len(entries), 15)
}

func stopIs(want session.StopReason) func(t *testing.T, s *session.Session) {
	return func(t *testing.T, s *session.Session) {
		require.Equal(t, want, s.RecordedStopReason())
	}
}

func trimNL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}

// checkFullV2 checks what v2_full.json (and the newer writer's copy of it)
// restores to, field by field.
func checkFullV2(t *testing.T, s *session.Session) {
	require.Equal(t, map[string]string{"team": "tools", "git.remote": "git@example.com:app.git", "pinned": ""}, s.Labels())
	require.Equal(t, session.Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "feature/hooks"}, s.Workspace())
	o := s.Origin()
	require.NotNil(t, o)
	require.Equal(t, "claude-code", o.Tool)
	require.Equal(t, "a881341", o.AgentID)
	require.Equal(t, int64(131721), o.Bytes)
	require.Equal(t, session.SessionRelationship{ParentID: "01JDPARENT", RootID: "01JDPARENT", Role: "general-purpose", ToolCallID: "toolu_01Task"}, s.Relationship())
	conv := s.Conversation()
	require.Len(t, conv, 6)
	require.True(t, conv[0].Injected)
	a := conv[2]
	require.Equal(t, "msg_013qape6", a.ResponseID)
	require.Equal(t, "claude-sonnet-4-5", a.Model)
	require.Equal(t, &session.Usage{InputTokens: 3, OutputTokens: 41, CacheReadTokens: 12118, CacheWriteTokens: 9923}, a.Usage)
	require.Equal(t, session.PartReasoning, a.Parts[0].Type)
	require.Equal(t, "EqECCkYIBRgCKkCq", a.Parts[0].Signature)
	require.Equal(t, "gAAAAABqAZLpDBVX", a.Parts[1].Encrypted)
	require.True(t, a.Parts[4].ProviderExecuted)
	require.JSONEq(t, `[{"type":"web_search_result","url":"https://example.com"}]`, string(a.Parts[5].Result))
	r := conv[3].Parts[0]
	require.Len(t, r.Content, 3)
	require.Equal(t, []byte{0x89, 'P', 'N', 'G'}, r.Content[1].Data)
	require.Equal(t, "https://example.com/diagram.svg", r.Content[2].URL)
	require.JSONEq(t, `{"code":200,"bytes":5120}`, string(r.Result))
	require.True(t, conv[3].Parts[1].IsError)
	require.Equal(t, "API Error: 529 overloaded", conv[4].Error)
	require.Equal(t, &session.Compaction{Trigger: session.CompactionAuto, PreTokens: 167094}, conv[5].Compaction)
	require.Equal(t, int64(3+41), s.Usage().RunTokens())
}
