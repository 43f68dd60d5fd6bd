package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateLabel(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		value   string
		wantErr bool
	}{
		{name: "plain", key: "team", value: "tools"},
		{name: "dotted and slashed key", key: "example.com/ticket-id_2", value: "T-7"},
		{name: "empty value is a tag", key: "pinned", value: ""},
		{name: "unicode value", key: "owner", value: "Zoë ✓"},
		{name: "longest key", key: strings.Repeat("k", MaxLabelKeyBytes), value: "v"},
		{name: "longest value", key: "k", value: strings.Repeat("v", MaxLabelValueBytes)},
		{name: "empty key", key: "", wantErr: true},
		{name: "upper-case key", key: "Team", wantErr: true},
		{name: "key starting with a dot", key: ".hidden", wantErr: true},
		{name: "key with a space", key: "a b", wantErr: true},
		{name: "key with a colon", key: "a:b", wantErr: true},
		{name: "key too long", key: strings.Repeat("k", MaxLabelKeyBytes+1), wantErr: true},
		{name: "value too long", key: "k", value: strings.Repeat("v", MaxLabelValueBytes+1), wantErr: true},
		{name: "value not UTF-8", key: "k", value: "caf\xe9", wantErr: true},
		{name: "value with a newline", key: "k", value: "a\nb", wantErr: true},
		{name: "value with DEL", key: "k", value: "a\x7f", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateLabel(tt.key, tt.value)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestLabelsSetRemoveAndBounded(t *testing.T) {
	s := newTestSession(t)
	require.Nil(t, s.Labels())
	require.NoError(t, s.SetLabel("team", "tools"))
	require.NoError(t, s.SetLabel("team", "infra"), "replacing a label")
	v, ok := s.Label("team")
	require.True(t, ok)
	require.Equal(t, "infra", v)
	got := s.Labels()
	got["team"] = "evil"
	require.Equal(t, map[string]string{"team": "infra"}, s.Labels(), "Labels returns a copy")
	require.ErrorIs(t, s.SetLabel("Bad", "x"), ErrInvalid)

	for i := len(s.Labels()); i < MaxLabels; i++ {
		require.NoError(t, s.SetLabel(fmt.Sprintf("k%d", i), "v"))
	}
	require.ErrorIs(t, s.SetLabel("one-too-many", "v"), ErrInvalid)
	require.NoError(t, s.SetLabel("team", "again"), "an existing key may change at the bound")
	require.Len(t, s.Labels(), MaxLabels)

	require.True(t, s.RemoveLabel("team"))
	require.False(t, s.RemoveLabel("team"))
	require.NoError(t, s.SetLabel("now-fits", "v"))
	require.True(t, s.RemoveLabel("now-fits"))

	require.NoError(t, s.Complete())
	require.NoError(t, s.SetLabel("archived", ""), "labels change in terminal states too")
	require.True(t, s.RemoveLabel("archived"))
}

func TestLabelsAtCreation(t *testing.T) {
	cfg := Config{ID: "l", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"}, Labels: map[string]string{"a": "1"}}
	s, err := New(cfg)
	require.NoError(t, err)
	cfg.Labels["a"] = "changed by the caller"
	require.Equal(t, map[string]string{"a": "1"}, s.Labels())
	require.NoError(t, s.SetLabel("b", "2"))
	require.Equal(t, map[string]string{"a": "1", "b": "2"}, s.Config().Labels, "Config reports the current labels")

	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = ""
	}
	for _, labels := range []map[string]string{{"BAD": "x"}, {"k": "a\x00"}, many} {
		_, err := New(Config{ID: "l", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"}, Labels: labels})
		require.ErrorIs(t, err, ErrInvalid)
	}
}

func TestWorkspaceProjectFixedDirAndBranchFollow(t *testing.T) {
	cfg := Config{ID: "w", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"},
		Workspace: Workspace{Project: "/src/app", Dir: "/src/app", Branch: "main"}}
	s, err := New(cfg)
	require.NoError(t, err)
	require.Equal(t, cfg.Workspace, s.Workspace())

	require.NoError(t, s.SetWorkspace(Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "feature/x"}))
	require.Equal(t, Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "feature/x"}, s.Workspace())
	require.Equal(t, s.Workspace(), s.Config().Workspace)

	require.ErrorIs(t, s.SetWorkspace(Workspace{Project: "/src/other", Dir: "/src/other"}), ErrImmutable)
	require.ErrorIs(t, s.SetWorkspace(Workspace{Dir: "/tmp"}), ErrImmutable, "a project cannot be unset either")
	require.ErrorIs(t, s.SetWorkspace(Workspace{Project: "/src/app", Dir: "bad\x00dir"}), ErrInvalid)
	require.ErrorIs(t, s.SetWorkspace(Workspace{Project: "/src/app", Branch: strings.Repeat("b", MaxPathBytes+1)}), ErrInvalid)
	require.Equal(t, "/src/app/cmd", s.Workspace().Dir, "refused changes change nothing")

	fresh := newTestSession(t)
	require.NoError(t, fresh.SetWorkspace(Workspace{Dir: "/tmp"}), "no project yet")
	require.NoError(t, fresh.SetWorkspace(Workspace{Project: "/src/late", Dir: "/src/late"}), "the first project sets it")
	require.ErrorIs(t, fresh.SetWorkspace(Workspace{Project: "/src/other"}), ErrImmutable)

	_, err = New(Config{ID: "w", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"}, Workspace: Workspace{Dir: "caf\xe9"}})
	require.ErrorIs(t, err, ErrInvalid)
}

func TestOriginIdentityFixed(t *testing.T) {
	o := Origin{Tool: "claude-code", SessionID: "0d3a", Path: "p.jsonl", Version: "1.0.43", Lines: 68, Bytes: 1196306,
		SHA256: strings.Repeat("ab", 32)}
	cfg := Config{ID: "o", CreatedAt: epoch, EnvironmentRef: EnvironmentRef{"p", "i", "r"}, Origin: &o}
	s, err := New(cfg)
	require.NoError(t, err)
	o.Path = "changed by the caller"
	require.Equal(t, "p.jsonl", s.Origin().Path)
	s.Origin().Path = "changed through the copy"
	require.Equal(t, "p.jsonl", s.Config().Origin.Path)

	grown := *s.Origin()
	grown.Lines, grown.Bytes, grown.Path = 70, 1200000, "moved.jsonl"
	require.NoError(t, s.SetOrigin(&grown), "what the import read changes")
	require.Equal(t, int64(70), s.Origin().Lines)

	other := grown
	other.SessionID = "another"
	require.ErrorIs(t, s.SetOrigin(&other), ErrImmutable)
	agent := grown
	agent.AgentID = "a1"
	require.ErrorIs(t, s.SetOrigin(&agent), ErrImmutable)
	require.ErrorIs(t, s.SetOrigin(nil), ErrImmutable)

	plain := newTestSession(t)
	require.NoError(t, plain.SetOrigin(nil))
	require.Nil(t, plain.Origin())

	bad := []Origin{
		{SessionID: "x"},
		{Tool: "x"},
		{Tool: "Claude Code", SessionID: "x"},
		{Tool: "x", SessionID: "x", Lines: -1},
		{Tool: "x", SessionID: "x", SHA256: "ABC"},
		{Tool: "x", SessionID: "x", SHA256: strings.Repeat("g", 64)},
		{Tool: "x", SessionID: strings.Repeat("x", MaxMessageIDBytes+1)},
	}
	for i, b := range bad {
		require.ErrorIs(t, plain.SetOrigin(&b), ErrInvalid, "origin %d", i)
	}
	require.Nil(t, plain.Origin())
}
