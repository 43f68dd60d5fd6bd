package blob

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

func TestCheck(t *testing.T) {
	content := []byte("hello")
	ref := session.ContentRef{Field: session.ContentText, SHA256: Hash(content), Size: 5}
	require.Equal(t, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", ref.SHA256)
	require.True(t, ValidHash(ref.SHA256))
	require.False(t, ValidHash("2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824"))
	require.False(t, ValidHash("../x"))
	require.NoError(t, Check(ref, content))
	tests := []struct {
		name    string
		content []byte
		ref     session.ContentRef
	}{
		{"other content", []byte("hellO"), ref},
		{"shorter", []byte("hell"), ref},
		{"size says more", content, session.ContentRef{SHA256: ref.SHA256, Size: 6}},
	}
	for _, tt := range tests {
		require.ErrorIs(t, Check(tt.ref, tt.content), ErrMismatch, tt.name)
	}
}

func TestExternalizer(t *testing.T) {
	var put []string
	ext := &Externalizer{Threshold: 4, Put: func(hash string, content []byte) error {
		put = append(put, hash)
		return nil
	}}
	_, ok, err := ext.Externalize(session.ContentData, []byte("abc"))
	require.NoError(t, err)
	require.False(t, ok, "below the threshold")
	require.Empty(t, put)
	ref, ok, err := ext.Externalize(session.ContentData, []byte("abcd"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, session.ContentRef{Field: session.ContentData, SHA256: Hash([]byte("abcd")), Size: 4}, ref)
	require.Equal(t, []string{ref.SHA256}, put)

	boom := errors.New("boom")
	ext.Put = func(string, []byte) error { return boom }
	_, ok, err = ext.Externalize(session.ContentText, []byte("abcd"))
	require.ErrorIs(t, err, boom)
	require.False(t, ok)
	for _, threshold := range []int{0, -1} {
		ext.Threshold = threshold
		_, ok, err = ext.Externalize(session.ContentText, make([]byte, 1<<20))
		require.NoError(t, err)
		require.False(t, ok, "threshold %d keeps everything inline", threshold)
	}
}

// TestArrivals: Check looks at the references of the messages after those
// it checked, when the next conversation continues them (the same
// memory), and at every message otherwise; a refused check remembers
// nothing.
func TestArrivals(t *testing.T) {
	refMsg := func(hash string) session.Message {
		return session.Message{Role: session.RoleUser, Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: "c", Content: []session.Part{
				{Type: session.PartImage, MediaType: "image/png", Ref: &session.ContentRef{Field: session.ContentData, SHA256: hash, Size: 1}},
			}},
		}}
	}
	conv := make(sessnap.Messages, 0, 8) // room to grow in place, as a session's conversation does
	conv = append(conv, refMsg("a"), session.TextMessage(session.RoleUser, "b", sessiontest.Epoch))
	var a Arrivals
	var seen []string
	held := func(ref session.ContentRef) error {
		seen = append(seen, ref.SHA256)
		if ref.SHA256 == "bad" {
			return errors.New("not held")
		}
		return nil
	}
	require.NoError(t, a.Check(conv, held))
	require.Equal(t, []string{"a"}, seen, "nested parts too")

	seen = nil
	grown := append(conv, refMsg("c"))
	require.NoError(t, a.Check(grown, held))
	require.Equal(t, []string{"c"}, seen, "only the new message")

	seen = nil
	refused := append(grown, refMsg("bad"))
	require.Error(t, a.Check(refused, held))
	require.Equal(t, []string{"bad"}, seen)
	seen = nil
	require.NoError(t, a.Check(append(grown, refMsg("d")), held))
	require.Equal(t, []string{"d"}, seen, "the refused snapshot was not remembered")

	seen = nil
	copied := append(sessnap.Messages(nil), grown...) // the same messages in other memory
	require.NoError(t, a.Check(copied, held))
	require.Equal(t, []string{"a", "c"}, seen, "other memory: every message")

	seen = nil
	require.NoError(t, a.Check(copied[:1], held))
	require.Equal(t, []string{"a"}, seen, "a shorter conversation: every message")

	seen = nil
	a.Reset()
	require.NoError(t, a.Check(copied, held))
	require.Equal(t, []string{"a", "c"}, seen, "after Reset: every message")
}

func TestFetch(t *testing.T) {
	content := []byte("hello")
	ref := session.ContentRef{SHA256: Hash(content), Size: 5}
	boom := errors.New("connection reset")
	tests := []struct {
		name        string
		src         func(session.ContentRef) ([]byte, error)
		wantMissing bool
		wantErr     error
	}{
		{"given", func(session.ContentRef) ([]byte, error) { return content, nil }, false, nil},
		{"no source", nil, true, nil},
		{"not found", func(session.ContentRef) ([]byte, error) { return nil, fmt.Errorf("%w: gone", sessionstore.ErrNotFound) }, true, nil},
		{"corrupt", func(session.ContentRef) ([]byte, error) { return nil, &sessionstore.CorruptionError{ID: "a"} }, true, nil},
		{"wrong content", func(session.ContentRef) ([]byte, error) { return []byte("hellO"), nil }, true, nil},
		{"the source fails", func(session.ContentRef) ([]byte, error) { return nil, boom }, false, boom},
	}
	for _, tt := range tests {
		got, err := Fetch(tt.src, ref)
		switch {
		case tt.wantMissing:
			require.ErrorIs(t, err, ErrMissing, tt.name)
			require.NotErrorIs(t, err, sessionstore.ErrNotFound, "%s: a missing blob is no missing session", tt.name)
			require.NotErrorIs(t, err, sessionstore.ErrCorrupt, tt.name)
		case tt.wantErr != nil:
			require.ErrorIs(t, err, tt.wantErr, tt.name)
			require.NotErrorIs(t, err, ErrMissing, tt.name)
		default:
			require.NoError(t, err, tt.name)
			require.Equal(t, content, got)
		}
	}
}
