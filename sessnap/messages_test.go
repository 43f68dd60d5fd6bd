package sessnap_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// TestAppendMessageIsMarshal: the messages encoded one by one, joined,
// and the head (MarshalHead) spliced together are Marshal's bytes exactly,
// for every fixture session and for random ones.
func TestAppendMessageIsMarshal(t *testing.T) {
	check := func(t *testing.T, snap sessnap.Snapshot) {
		want, err := sessnap.Marshal(snap)
		require.NoError(t, err)
		head, err := sessnap.MarshalHead(snap)
		require.NoError(t, err)
		var msgs []byte
		msgs = append(msgs, '[')
		for i, m := range snap.Messages {
			if i > 0 {
				msgs = append(msgs, ',')
			}
			msgs, err = sessnap.AppendMessage(msgs, m, nil)
			require.NoError(t, err)
		}
		msgs = append(msgs, ']')
		got := bytes.Replace(head, []byte(`"messages":[]`), append([]byte(`"messages":`), msgs...), 1)
		require.Equal(t, string(want), string(got))
	}
	check(t, mustOf(t, fullSession()))
	check(t, mustOf(t, fullSessionV2()))
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		s := fullSessionV2()
		for i := range 1 + r.IntN(20) {
			m := session.TextMessage(session.RoleUser, strings.Repeat("é<x>\"\\", r.IntN(40)), sessiontest.Epoch)
			m.ID = fmt.Sprintf("m-%d-%d", seed, i)
			require.NoError(t, s.AppendMessage(m))
		}
		check(t, mustOf(t, s))
	}
}

// memExt keeps content of at least min bytes in a map, by SHA-256.
type memExt struct {
	min  int
	data map[string][]byte
}

func (e *memExt) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if len(content) < e.min {
		return session.ContentRef{}, false, nil
	}
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	e.data[h] = bytes.Clone(content)
	return session.ContentRef{Field: field, SHA256: h, Size: int64(len(content))}, true, nil
}

// TestExternalizeResolve: content kept out of line is written as a
// reference, decodes as a part without its content (which restores: a
// light load), and resolves to the message it was.
// TestAppendMessageRefusesInvalidRawJSON: raw JSON that does not parse,
// which the walk before the encoding leaves to the encoder, is refused as
// Marshal refuses it, the value named by its path.
func TestAppendMessageRefusesInvalidRawJSON(t *testing.T) {
	for _, tc := range []struct {
		name     string
		part     session.Part
		wantPath string
	}{
		{"tool input", session.Part{Type: session.PartToolCall, ToolCallID: "c", Name: "n", Input: []byte(`{"x":`)}, "$.message.parts[0].input"},
		{"tool result", session.Part{Type: session.PartToolResult, ToolCallID: "c", Result: []byte(`[1,`)}, "$.message.parts[0].result"},
		{"input of a text part", session.Part{Type: session.PartText, Text: "t", Input: []byte(`nope`)}, "$.message.parts[0].input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := session.Message{Role: session.RoleAssistant, Parts: []session.Part{tc.part}, CreatedAt: sessiontest.Epoch}
			_, err := sessnap.AppendMessage(nil, m, nil)
			require.ErrorIs(t, err, sessnap.ErrUnencodable)
			require.Contains(t, err.Error(), tc.wantPath)
			require.Contains(t, err.Error(), "raw JSON is not valid UTF-8 JSON")
		})
	}
}

func TestExternalizeResolve(t *testing.T) {
	s := fullSessionV2()
	big := strings.Repeat("output line\n", 400)
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c9", Output: big, Content: []session.Part{
			{Type: session.PartImage, MediaType: "image/png", Data: bytes.Repeat([]byte{0x89, 'P'}, 3000)},
		}},
		{Type: session.PartText, Text: "short"},
	}}))
	snap := mustOf(t, s)
	ext := &memExt{min: 1024, data: map[string][]byte{}}
	var msgs []byte
	msgs = append(msgs, '[')
	for i, m := range snap.Messages {
		if i > 0 {
			msgs = append(msgs, ',')
		}
		var err error
		msgs, err = sessnap.AppendMessage(msgs, m, ext)
		require.NoError(t, err)
	}
	msgs = append(msgs, ']')
	require.Len(t, ext.data, 2, "the output and the image went out of line")
	require.Contains(t, string(msgs), `"blob":{"of":"output","sha256":"`)
	require.NotContains(t, string(msgs), "output line")

	head, err := sessnap.MarshalHead(snap)
	require.NoError(t, err)
	stored := bytes.Replace(head, []byte(`"messages":[]`), append([]byte(`"messages":`), msgs...), 1)
	light, err := sessnap.Unmarshal(stored)
	require.NoError(t, err)
	last := light.Messages[len(light.Messages)-1]
	require.Equal(t, "", last.Parts[0].Output)
	require.Equal(t, &session.ContentRef{Field: session.ContentOutput, SHA256: last.Parts[0].Ref.SHA256, Size: int64(len(big))}, last.Parts[0].Ref)
	_, err = light.Restore()
	require.NoError(t, err, "a snapshot loaded without its content restores")
	var refs int
	light.Messages.Refs(func(session.ContentRef) { refs++ })
	require.Equal(t, 2, refs)

	require.NoError(t, light.Messages.Resolve(func(r session.ContentRef) ([]byte, error) { return ext.data[r.SHA256], nil }))
	full, err := sessnap.Marshal(light)
	require.NoError(t, err)
	want, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	require.Equal(t, string(want), string(full), "resolved, it is the snapshot it was")
}

// TestChecker: validating only the new messages finds what Restore finds
// in them, including a message ID used before.
func TestChecker(t *testing.T) {
	s := fullSessionV2()
	snap := mustOf(t, s)
	var c sessnap.Checker
	require.NoError(t, c.Check(snap))
	c.Advance(snap)
	require.Equal(t, len(snap.Messages), c.Known())
	m := session.TextMessage(session.RoleUser, "next", sessiontest.Epoch)
	m.ID = "fresh"
	require.NoError(t, s.AppendMessage(m))
	next := mustOf(t, s)
	require.NoError(t, c.Check(next))

	dup := next
	dup.Messages = append(append(sessnap.Messages(nil), next.Messages...), next.Messages[len(next.Messages)-1])
	require.ErrorIs(t, c.Check(dup), sessnap.ErrInvalid, "an ID already in the conversation")
	bad := next
	bad.Messages = append(append(sessnap.Messages(nil), next.Messages...), session.Message{Role: "robot", Parts: []session.Part{{Type: session.PartText}}})
	require.ErrorIs(t, c.Check(bad), sessnap.ErrInvalid)
	head := next
	head.State = "dancing"
	require.Error(t, c.Check(head), "the head is checked whole")
}

func mustOf(t *testing.T, s *session.Session) sessnap.Snapshot {
	t.Helper()
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	return snap
}
