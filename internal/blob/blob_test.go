package blob

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

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
	tests := []struct {
		name    string
		content []byte
		ref     session.ContentRef
		wantMsg string // "": accepted
	}{
		{name: "the content", content: content, ref: ref},
		{name: "other content", content: []byte("hellO"), ref: ref, wantMsg: "content does not match its reference: its SHA-256 differs"},
		{name: "shorter", content: []byte("hell"), ref: ref, wantMsg: "content does not match its reference: 4 bytes, the reference says 5"},
		{name: "size says more", content: content, ref: session.ContentRef{SHA256: ref.SHA256, Size: 6},
			wantMsg: "content does not match its reference: 5 bytes, the reference says 6"},
		{name: "empty content", content: nil, ref: session.ContentRef{SHA256: Hash(nil), Size: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.ref, tt.content)
			if tt.wantMsg == "" {
				require.NoError(t, err)
				require.NoError(t, CheckHash(tt.ref.SHA256, tt.content))
				return
			}
			require.ErrorIs(t, err, ErrMismatch)
			require.EqualError(t, err, tt.wantMsg)
		})
	}
	require.EqualError(t, LongerThan(5), "content does not match its reference: more than 5 bytes, the reference says 5")
	require.ErrorIs(t, LongerThan(5), ErrMismatch)
	require.ErrorIs(t, CheckHash(ref.SHA256, []byte("hellO")), ErrMismatch)
}

func TestValidHash(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{name: "an address", s: Hash([]byte("hello")), want: true},
		{name: "upper case", s: strings.ToUpper(Hash([]byte("hello")))},
		{name: "short", s: Hash([]byte("hello"))[:63]},
		{name: "long", s: Hash([]byte("hello")) + "0"},
		{name: "a path", s: "../x"},
		{name: "not hex", s: strings.Repeat("g", 64)},
		{name: "empty", s: ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ValidHash(tt.s), tt.name)
	}
}

func TestHashReader(t *testing.T) {
	content := []byte("hello, world")
	n, hash, err := HashReader(bytes.NewReader(content), 100)
	require.NoError(t, err)
	require.Equal(t, int64(len(content)), n)
	require.Equal(t, Hash(content), hash)
	n, _, err = HashReader(bytes.NewReader(content), 4)
	require.NoError(t, err)
	require.Equal(t, int64(5), n, "reads one byte past the limit, so that the caller sees content longer than it")
	boom := errors.New("boom")
	_, _, err = HashReader(iotest.ErrReader(boom), 4)
	require.ErrorIs(t, err, boom)
}

func TestThreshold(t *testing.T) {
	require.Equal(t, sessionstore.DefaultBlobThreshold, Threshold(0))
	require.Equal(t, -1, Threshold(-1), "negative: never")
	require.Equal(t, 100, Threshold(100))
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
	refMsg := func(content string) session.Message {
		return session.Message{Role: session.RoleUser, Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: "c", Content: []session.Part{
				{Type: session.PartImage, MediaType: "image/png", Ref: &session.ContentRef{Field: session.ContentData, SHA256: Hash([]byte(content)), Size: 1}},
			}},
		}}
	}
	conv := make(sessnap.Messages, 0, 8) // room to grow in place, as a session's conversation does
	conv = append(conv, refMsg("a"), session.TextMessage(session.RoleUser, "b", sessiontest.Epoch))
	var a Arrivals
	var seen []string
	size := func(hash string) (int64, bool, error) {
		seen = append(seen, hash)
		return 1, hash != Hash([]byte("x")), nil
	}
	hashes := func(contents ...string) []string {
		var hs []string
		for _, c := range contents {
			hs = append(hs, Hash([]byte(c)))
		}
		return hs
	}
	require.NoError(t, a.Check("s", conv, size))
	require.Equal(t, hashes("a"), seen, "nested parts too")

	seen = nil
	grown := append(conv, refMsg("c"))
	require.NoError(t, a.Check("s", grown, size))
	require.Equal(t, hashes("c"), seen, "only the new message")

	seen = nil
	refused := append(grown, refMsg("x"))
	require.ErrorIs(t, a.Check("s", refused, size), sessionstore.ErrInvalidSnapshot)
	require.Equal(t, hashes("x"), seen)
	seen = nil
	require.NoError(t, a.Check("s", append(grown, refMsg("d")), size))
	require.Equal(t, hashes("d"), seen, "the refused snapshot was not remembered")

	seen = nil
	copied := append(sessnap.Messages(nil), grown...) // the same messages in other memory
	require.NoError(t, a.Check("s", copied, size))
	require.Equal(t, hashes("a", "c"), seen, "other memory: every message")

	seen = nil
	require.NoError(t, a.Check("s", copied[:1], size))
	require.Empty(t, seen, "a shorter conversation in the same memory (a rewind): its messages were checked")
	seen = nil
	require.NoError(t, a.Check("s", append(sessnap.Messages(nil), copied[:1]...), size))
	require.Equal(t, hashes("a"), seen, "a shorter conversation in other memory: every message")

	seen = nil
	a.Reset()
	require.NoError(t, a.Check("s", copied, size))
	require.Equal(t, hashes("a", "c"), seen, "after Reset: every message")
}

// TestArrivalsRule: the rule of a reference that arrives with a snapshot,
// accepted and refused, as every adapter's append applies it.
func TestArrivalsRule(t *testing.T) {
	content := []byte("hello")
	good := session.ContentRef{Field: session.ContentData, SHA256: Hash(content), Size: int64(len(content))}
	holds := func(hash string) (int64, bool, error) {
		if hash == good.SHA256 {
			return good.Size, true, nil
		}
		return 0, false, nil
	}
	boom := errors.New("disk on fire")
	tests := []struct {
		name    string
		ref     session.ContentRef
		size    func(string) (int64, bool, error)
		wantErr error
		wantMsg string
	}{
		{name: "held with its size", ref: good, size: holds},
		{name: "not held", ref: session.ContentRef{SHA256: Hash([]byte("other")), Size: 5}, size: holds,
			wantErr: sessionstore.ErrInvalidSnapshot,
			wantMsg: "sessionstore: invalid snapshot: session s: a part references content the session does not hold (SHA-256 " + Hash([]byte("other")) + ", 5 bytes)"},
		{name: "held with another size", ref: session.ContentRef{SHA256: good.SHA256, Size: 6}, size: holds, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "negative size", ref: session.ContentRef{SHA256: good.SHA256, Size: -1}, size: holds, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "the session holds nothing", ref: good, size: nil, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "not an address", ref: session.ContentRef{SHA256: "../../etc/passwd", Size: 5},
			size: func(string) (int64, bool, error) { panic("asked about an invalid address") }, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "upper-case address", ref: session.ContentRef{SHA256: strings.ToUpper(good.SHA256), Size: 5},
			size: func(string) (int64, bool, error) { panic("asked about an invalid address") }, wantErr: sessionstore.ErrInvalidSnapshot},
		{name: "the source fails", ref: good, size: func(string) (int64, bool, error) { return 0, false, boom }, wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := sessnap.Messages{{Role: session.RoleUser, Parts: []session.Part{
				{Type: session.PartImage, MediaType: "image/png", Ref: &tt.ref},
			}}}
			err := new(Arrivals).Check("s", msgs, tt.size)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.ErrorIs(t, Refuse("s", msgs), sessionstore.ErrInvalidSnapshot, "Refuse refuses every reference")
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			if !errors.Is(tt.wantErr, sessionstore.ErrInvalidSnapshot) {
				require.NotErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
			}
			if tt.wantMsg != "" {
				require.EqualError(t, err, tt.wantMsg)
			}
		})
	}
	require.NoError(t, Refuse("s", sessnap.Messages{session.TextMessage(session.RoleUser, "no refs", sessiontest.Epoch)}))
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
