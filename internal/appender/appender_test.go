package appender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// memExt keeps content of at least 1 KiB out of line, in memory.
type memExt struct{ m map[string][]byte }

func (e *memExt) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	if len(content) < 1<<10 {
		return session.ContentRef{}, false, nil
	}
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	e.m[h] = append([]byte(nil), content...)
	return session.ContentRef{Field: field, SHA256: h, Size: int64(len(content))}, true, nil
}

// replay rebuilds each revision's stored snapshot from lines, as a reader
// does, and returns the last one resolved (its content read back from ext).
func replay(t *testing.T, lines [][]byte, ext *memExt) sessnap.Snapshot {
	t.Helper()
	snaps := record.NewSnapshots("a", 1<<24)
	for _, line := range lines {
		m, payload, err := record.Parse(line[:len(line)-1], 1<<24)
		require.NoError(t, err)
		require.NoError(t, snaps.Add(&record.Rec{Meta: m, Payload: payload, LineLen: int64(len(line))}))
	}
	snap, err := sessnap.Unmarshal(snaps.Bytes())
	require.NoError(t, err)
	require.NoError(t, snap.Messages.Resolve(func(ref session.ContentRef) ([]byte, error) { return ext.m[ref.SHA256], nil }))
	return snap
}

func encode(t *testing.T, snap sessnap.Snapshot) string {
	t.Helper()
	b, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	return string(b)
}

// TestLineFollowsTheConversation: a growing conversation is written as
// deltas of its new messages, a rewritten one in full, content out of
// line makes format 4 records, and every revision rebuilds exactly.
func TestLineFollowsTheConversation(t *testing.T) {
	ext := &memExt{m: map[string][]byte{}}
	a := New(ext, 1<<24, false)
	s := sessiontest.New("a")
	var lines [][]byte
	kinds := map[string]int{}
	at := sessiontest.Epoch
	appendSnap := func(snap sessnap.Snapshot) {
		t.Helper()
		m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 1, Time: at}
		line, err := a.Line("a", m, &snap)
		require.NoError(t, err)
		lines = append(lines, line)
		got, _, err := record.Parse(line[:len(line)-1], 1<<24)
		require.NoError(t, err)
		kinds[got.Kind]++
		if strings.Contains(string(line), `"blob":{`) {
			require.Equal(t, record.Version4, got.Version, "a record holding references is format 4")
		}
		require.Equal(t, encode(t, snap), encode(t, replay(t, lines, ext)), "revision %d", len(lines))
	}
	appendSnap(sessiontest.Snap(t, s))
	for i := range 30 {
		text := "short message"
		if i%5 == 0 {
			text = strings.Repeat("long ", 400) // out of line
		}
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, at)))
		appendSnap(sessiontest.Snap(t, s))
	}
	require.GreaterOrEqual(t, kinds[record.KindDelta], 24, "a growing conversation is written as deltas")
	require.NotEmpty(t, ext.m)

	// A rewritten conversation (not a continuation) is encoded whole.
	r := sessiontest.New("a")
	require.NoError(t, r.AppendMessage(session.TextMessage(session.RoleUser, "a fresh start", at)))
	appendSnap(sessiontest.Snap(t, r))
	// And a copy of the messages (other memory, equal values) is still
	// recognised as the stored ones: the next record is a delta.
	require.NoError(t, r.AppendMessage(session.TextMessage(session.RoleAssistant, "ok", at)))
	snap := sessiontest.Snap(t, r)
	snap.Messages = append(sessnap.Messages(nil), snap.Messages...)
	for i := range snap.Messages {
		snap.Messages[i] = snap.Messages[i].Clone()
	}
	before := kinds[record.KindDelta]
	appendSnap(snap)
	require.Equal(t, before+1, kinds[record.KindDelta])
}

// TestLineRefusals: a message or a head above the cap is ErrTooLarge, a
// snapshot of another session ErrInvalidSnapshot, and nothing changes: the
// next line still builds on the last stored revision.
func TestLineRefusals(t *testing.T) {
	a := New(nil, 64<<10, false)
	s := sessiontest.New("a")
	m := record.Meta{Schema: sessnap.SchemaVersion, Rev: 1, Gen: 1, Time: sessiontest.Epoch}
	first, err := a.Line("a", m, ptr(sessiontest.Snap(t, s)))
	require.NoError(t, err)

	big := sessiontest.Snap(t, s)
	big.Messages = append(sessnap.Messages(nil), session.TextMessage(session.RoleUser, strings.Repeat("x", 65<<10), sessiontest.Epoch))
	m.Rev = 2
	_, err = a.Line("a", m, &big)
	require.ErrorIs(t, err, sessionstore.ErrTooLarge)
	require.ErrorContains(t, err, "message 0")

	head := sessiontest.Snap(t, s)
	head.Title = strings.Repeat("t", 65<<10)
	_, err = a.Line("a", m, &head)
	require.ErrorIs(t, err, sessionstore.ErrTooLarge)
	require.ErrorContains(t, err, "without its messages")

	_, err = a.Line("b", m, ptr(sessiontest.Snap(t, s)))
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)

	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "fits", sessiontest.Epoch)))
	line, err := a.Line("a", m, ptr(sessiontest.Snap(t, s)))
	require.NoError(t, err)
	require.Equal(t, encode(t, sessiontest.Snap(t, s)), encode(t, replay(t, [][]byte{first, line}, &memExt{})))
}

// TestFullOnly writes every revision as a format 1 full record of the
// snapshot as sessnap.Marshal writes it, content inline.
func TestFullOnly(t *testing.T) {
	a := New(&memExt{m: map[string][]byte{}}, 1<<24, true)
	s := sessiontest.New("a")
	require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, strings.Repeat("inline ", 500), sessiontest.Epoch)))
	snap := sessiontest.Snap(t, s)
	for rev := uint64(1); rev <= 3; rev++ {
		line, err := a.Line("a", record.Meta{Schema: sessnap.SchemaVersion, Rev: rev, Gen: 1, Time: sessiontest.Epoch}, &snap)
		require.NoError(t, err)
		m, payload, err := record.Parse(line[:len(line)-1], 1<<24)
		require.NoError(t, err)
		require.Equal(t, record.KindFull, m.Kind)
		require.Equal(t, record.Version1, m.Version)
		require.True(t, bytes.Equal(payload, []byte(encode(t, snap))), "the snapshot as Marshal writes it")
	}
}

// TestLineHeadChangedInPlace: the head encoded last is reused only while
// the next head equals it; one whose map or pointed-to value the caller
// changed in place, the same memory as before, is encoded again.
func TestLineHeadChangedInPlace(t *testing.T) {
	a := New(nil, 1<<24, false)
	snap := sessiontest.Snap(t, sessiontest.New("a"))
	snap.Labels = map[string]string{"team": "one"}
	snap.Usage = &session.Usage{}
	var lines [][]byte
	for rev, change := range []func(){
		func() {},
		func() {}, // unchanged: from the cache
		func() { snap.Labels["team"] = "two" },
		func() { snap.Usage.InputTokens = 7 },
		func() { snap.Title = "titled" },
		func() {},
	} {
		change()
		m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(rev + 1), Gen: 1, Time: sessiontest.Epoch}
		line, err := a.Line("a", m, &snap)
		require.NoError(t, err)
		lines = append(lines, line)
		require.Equal(t, encode(t, snap), encode(t, replay(t, lines, &memExt{})), "revision %d", rev+1)
	}
}

func ptr(s sessnap.Snapshot) *sessnap.Snapshot { return &s }
