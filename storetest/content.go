package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Large part content: every adapter keeps the session whole however large
// its content, stores content attached many times once (as DiskUsage
// says), loads without it when asked (LoadWith), and never stores a
// reference to content the session does not hold (Writer.Append's
// contract).

// large returns n bytes of incompressible content, the same for a seed.
func large(seed uint64, n int) []byte {
	b := make([]byte, n)
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

// largeText returns n bytes of text, the same for a seed.
func largeText(seed uint64, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz      \n"
	b := large(seed, n)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// refOf is the reference a store gives content kept out of line.
func refOf(field string, content []byte) session.ContentRef {
	sum := sha256.Sum256(content)
	return session.ContentRef{Field: field, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

// outOfLine reports whether the store is expected to keep large content
// out of line.
func (f *fixture) outOfLine() bool { return !f.h.InlineContent }

// beyondCap starts a check of a session of size bytes, which must be
// larger than the default record cap. A store that keeps all content in
// its records (Harness.InlineContent) has its sessions bound by the cap:
// there the check skips, saying why.
func (f *fixture) beyondCap(size int, why string) {
	f.t.Helper()
	if !f.outOfLine() {
		f.t.Skip(why)
	}
	require.Greater(f.t, size, sessionstore.DefaultMaxRecordBytes)
}

// appendMessage appends m to s and stores the session's snapshot as the
// writer's next revision.
func (f *fixture) appendMessage(w sessionstore.Writer, s *session.Session, m session.Message) sessnap.Snapshot {
	f.t.Helper()
	require.NoError(f.t, s.AppendMessage(m))
	snap := sessiontest.Snap(f.t, s)
	f.append(w, w.Revision(), snap)
	return snap
}

// checkContentStoredOnce attaches a 1 MiB image and a 64 KiB tool output
// to ten revisions: the session reads back whole at each, and a store that
// reports its usage holds them once (within 1.2 times their size, its
// records and other files included).
func checkContentStoredOnce(f *fixture) {
	t := f.t
	image := large(1, 1<<20)
	output := largeText(2, 64<<10)
	s := sessiontest.New("once")
	w := f.createSnap(sessiontest.Snap(t, s))
	var snaps []sessnap.Snapshot
	for i := range 10 {
		snaps = append(snaps, f.appendMessage(w, s, session.Message{Role: session.RoleTool, Parts: []session.Part{
			{Type: session.PartToolResult, ToolCallID: fmt.Sprintf("call-%d", i), Output: output, Content: []session.Part{
				{Type: session.PartImage, MediaType: "image/png", Data: image},
			}},
		}}))
	}
	requireSameLarge(t, snaps[len(snaps)-1], f.load("once").Snapshot)
	rec, err := f.s.LoadRevision(f.ctx, "once", 2)
	require.NoError(t, err)
	requireSameLarge(t, snaps[0], rec.Snapshot)

	if !f.outOfLine() {
		return
	}
	rep, err := f.s.DiskUsage(f.ctx, "once")
	require.NoError(t, err)
	unique := int64(len(image) + len(output))
	got := rep.Sessions[0]
	require.Positive(t, got.BlobBytes, "no content kept out of line: %+v", got)
	require.LessOrEqual(t, got.BlobBytes, unique*12/10, "content attached ten times is held more than once: %+v", got)
	require.LessOrEqual(t, got.TotalBytes, unique*12/10, "the session holds its content more than once: %+v", got)
}

// checkLargerThanCap appends 80 messages of 256 KiB of text, 20 MiB in
// all, more than the default record cap: every revision appends, and the
// latest and a middle one load back equal.
func checkLargerThanCap(f *fixture) {
	t := f.t
	const messages, size = 80, 256 << 10
	f.beyondCap(messages*size, "the store keeps all content in its records, within the record cap")
	s := sessiontest.New("big")
	w := f.createSnap(sessiontest.Snap(t, s))
	var snaps []sessnap.Snapshot
	for i := range messages {
		text := strings.Repeat(fmt.Sprintf("message %04d ", i), size/13)
		snaps = append(snaps, f.appendMessage(w, s, session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
	}
	rec := f.load("big")
	require.Equal(t, uint64(messages+1), rec.Revision)
	want, err := sessnap.Marshal(snaps[messages-1])
	require.NoError(t, err)
	got, err := sessnap.Marshal(rec.Snapshot)
	require.NoError(t, err)
	require.Greater(t, len(got), sessionstore.DefaultMaxRecordBytes)
	require.True(t, string(want) == string(got), "the latest revision loads back different (%d bytes, want %d)", len(got), len(want))
	mid, err := f.s.LoadRevision(f.ctx, "big", messages/2+1)
	require.NoError(t, err)
	requireSameLarge(t, snaps[messages/2-1], mid.Snapshot)
}

// checkConversationLargerThanCap creates a session whose conversation,
// 1,100 messages of 15.5 KiB (each below the blob threshold, kept in the
// records), is larger than the default record cap, and appends to it: it
// loads back equal, without its content too, and a store that reports its
// usage holds it about once.
func checkConversationLargerThanCap(f *fixture) {
	t := f.t
	const messages, size = 1100, 31 << 9
	f.beyondCap(messages*size, "the store keeps every message in its full records, within the record cap")
	require.Less(t, size, sessionstore.DefaultBlobThreshold)
	s := sessiontest.New("long")
	for i := range messages {
		text := strings.Repeat(fmt.Sprintf("%05d ", i), size/6)
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, text, sessiontest.Epoch)))
	}
	first := sessiontest.Snap(t, s)
	w := f.createSnap(first)
	var last sessnap.Snapshot
	for i := range 3 {
		last = f.appendMessage(w, s, session.TextMessage(session.RoleAssistant, fmt.Sprintf("reply %d", i), sessiontest.Epoch))
	}
	// Every read of the conversation decodes all of it: a few suffice.
	rec := f.load("long")
	require.Equal(t, uint64(4), rec.Revision)
	requireSameLarge(t, last, rec.Snapshot)
	light, err := f.s.LoadWith(f.ctx, "long", sessionstore.LoadOptions{Revision: 1, WithoutContent: true})
	require.NoError(t, err)
	require.Len(t, light.Snapshot.Messages, messages, "the messages are no content kept out of line")
	for _, i := range []int{0, messages / 2, messages - 1} {
		require.Equal(t, first.Messages[i].Parts[0].Text, light.Snapshot.Messages[i].Parts[0].Text, "message %d", i)
	}

	rep, err := f.s.DiskUsage(f.ctx, "long")
	require.NoError(t, err)
	total := int64(messages * size)
	require.LessOrEqual(t, rep.Sessions[0].TotalBytes, total*3/2, "the conversation is held about once: %+v", rep.Sessions[0])
}

// checkLoadWithoutContent: LoadWith WithoutContent gives the large parts'
// references (a store that keeps content out of line and loads without it)
// and the small parts whole; the snapshot restores, and appending it with
// one more message keeps the content.
func checkLoadWithoutContent(f *fixture) {
	t := f.t
	text := largeText(3, 40<<10)
	output := largeText(4, 32<<10)
	image := large(5, 24<<10)
	s := sessiontest.New("light")
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
		{Type: session.PartText, Text: text},
		{Type: session.PartText, Text: "and a short one"},
		{Type: session.PartImage, MediaType: "image/png", Data: image},
	}}))
	require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleTool, Parts: []session.Part{
		{Type: session.PartToolResult, ToolCallID: "c1", Output: output, Content: []session.Part{
			{Type: session.PartImage, MediaType: "image/png", Data: image},
			{Type: session.PartText, Text: "caption"},
		}},
		{Type: session.PartToolResult, ToolCallID: "c2", Output: "ok"},
	}}))
	whole := sessiontest.Snap(t, s)
	w := f.createSnap(whole)

	rec, err := f.s.LoadWith(f.ctx, "light", sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	require.Equal(t, uint64(1), rec.Revision)
	msgs := rec.Snapshot.Messages
	require.Len(t, msgs, 2)
	if f.outOfLine() {
		requireRef(t, msgs[0].Parts[0], refOf(session.ContentText, []byte(text)))
		requireRef(t, msgs[0].Parts[2], refOf(session.ContentData, image))
		requireRef(t, msgs[1].Parts[0], refOf(session.ContentOutput, []byte(output)))
		requireRef(t, msgs[1].Parts[0].Content[0], refOf(session.ContentData, image))
	} else {
		requireSameLarge(t, whole, rec.Snapshot, "a store that keeps content inline loads it whole")
	}
	require.Equal(t, "and a short one", msgs[0].Parts[1].Text)
	require.Nil(t, msgs[0].Parts[1].Ref)
	require.Equal(t, "caption", msgs[1].Parts[0].Content[1].Text)
	require.Equal(t, "ok", msgs[1].Parts[1].Output)
	require.Nil(t, msgs[1].Parts[1].Ref)
	full, err := f.s.LoadWith(f.ctx, "light", sessionstore.LoadOptions{Revision: 1})
	require.NoError(t, err)
	requireSameLarge(t, whole, full.Snapshot, "LoadWith without options loads the content")

	// The light snapshot restores and is appended with one more message:
	// the references stay the session's content.
	ls, err := rec.Session()
	require.NoError(t, err)
	next := session.TextMessage(session.RoleAssistant, "done", sessiontest.Epoch)
	next.ID = "done" // a restored session gives a message without one a new ID
	require.NoError(t, ls.AppendMessage(next))
	f.append(w, 1, sessiontest.Snap(t, ls))
	require.NoError(t, s.AppendMessage(next))
	requireSameLarge(t, sessiontest.Snap(t, s), f.load("light").Snapshot, "the content after a light append")
	again, err := f.s.LoadWith(f.ctx, "light", sessionstore.LoadOptions{Revision: 2, WithoutContent: true})
	require.NoError(t, err)
	requireSameLarge(t, sessiontest.Snap(t, ls), again.Snapshot, "the light revision 2")
}

// requireRef requires p to hold want in place of its content.
func requireRef(t require.TestingT, p session.Part, want session.ContentRef) {
	require.NotNil(t, p.Ref, "a %s part's %d bytes of %s are loaded", p.Type, want.Size, want.Field)
	require.Equal(t, want, *p.Ref)
	require.Empty(t, p.Text)
	require.Empty(t, p.Output)
	require.Empty(t, p.Data)
}

// checkForeignReference: a part referencing content the session does not
// hold — never stored, another session's, of another size — is refused
// with ErrInvalidSnapshot: nothing is written, the writer stays usable.
func checkForeignReference(f *fixture) {
	t := f.t
	content := largeText(6, 20<<10)
	owner := sessiontest.New("owner")
	ow := f.createSnap(sessiontest.Snap(t, owner))
	f.appendMessage(ow, owner, session.TextMessage(session.RoleUser, content, sessiontest.Epoch))
	held := refOf(session.ContentText, []byte(content))

	withRef := func(s *session.Session, ref session.ContentRef) sessnap.Snapshot {
		c := sessiontest.Snap(t, s)
		restored, err := c.Restore()
		require.NoError(t, err)
		require.NoError(t, restored.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{{Type: session.PartText, Ref: &ref}}}))
		return sessiontest.Snap(t, restored)
	}
	never := refOf(session.ContentText, []byte(largeText(7, 20<<10)))
	wrongSize := held
	wrongSize.Size++

	other := sessiontest.New("other")
	w := f.createSnap(sessiontest.Snap(t, other))
	before := f.load("other")
	for _, tt := range []struct {
		name string
		s    *session.Session
		w    sessionstore.Writer
		ref  session.ContentRef
	}{
		{"content never stored", other, w, never},
		{"another session's content", other, w, held},
		{"the session's content with another size", owner, ow, wrongSize},
	} {
		_, err := tt.w.Append(f.ctx, tt.w.Revision(), withRef(tt.s, tt.ref))
		require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot, tt.name)
	}
	after := f.load("other")
	require.Equal(t, before.Revision, after.Revision, "a refused append wrote something")
	requireSameLarge(t, before.Snapshot, after.Snapshot)
	require.Equal(t, uint64(2), f.load("owner").Revision)
	f.append(w, 1, stepSnap(t, "other", 2)) // still usable

	// A new session holds no content: Create refuses every reference.
	_, err := f.s.Create(f.ctx, withRef(sessiontest.New("fresh"), held), sessionstore.AcquireOptions{})
	require.ErrorIs(t, err, sessionstore.ErrInvalidSnapshot)
	_, err = f.s.Load(f.ctx, "fresh")
	require.ErrorIs(t, err, sessionstore.ErrNotFound)
}

// checkForkContent: a fork of a revision holding large content has it, and
// keeps it when its source is deleted.
func checkForkContent(f *fixture) {
	t := f.t
	src := sessiontest.New("src")
	w := f.createSnap(sessiontest.Snap(t, src))
	first := f.appendMessage(w, src, session.TextMessage(session.RoleUser, largeText(8, 30<<10), sessiontest.Epoch))
	f.appendMessage(w, src, session.TextMessage(session.RoleUser, largeText(9, 30<<10), sessiontest.Epoch))

	fw := f.fork("src", 2, "fork")
	want := adapter.ForkSnapshot(first, "fork")
	requireSameLarge(t, want, f.load("fork").Snapshot)
	require.NoError(t, w.Delete(f.ctx))
	requireSameLarge(t, want, f.load("fork").Snapshot, "the fork after its source's deletion")

	// The fork appends on its content as its own.
	light, err := f.s.LoadWith(f.ctx, "fork", sessionstore.LoadOptions{WithoutContent: true})
	require.NoError(t, err)
	fs, err := light.Session()
	require.NoError(t, err)
	forked := session.TextMessage(session.RoleAssistant, "forked", sessiontest.Epoch)
	forked.ID = "forked" // a restored session gives a message without one a new ID
	require.NoError(t, fs.AppendMessage(forked))
	f.append(fw, 1, sessiontest.Snap(t, fs))
	restored, err := want.Restore()
	require.NoError(t, err)
	require.NoError(t, restored.AppendMessage(forked))
	requireSameLarge(t, sessiontest.Snap(t, restored), f.load("fork").Snapshot)
}

// checkContentCopied: large content is the store's own copy, as small
// content is: a caller that changes its snapshot after an Append, or a
// record it loaded, changes nothing stored.
func checkContentCopied(f *fixture) {
	t := f.t
	s := sessiontest.New("copied")
	w := f.createSnap(sessiontest.Snap(t, s))
	var snaps []sessnap.Snapshot
	for i := range 2 {
		require.NoError(t, s.AppendMessage(session.Message{Role: session.RoleUser, Parts: []session.Part{
			{Type: session.PartImage, MediaType: "image/png", Data: large(10, 32<<10)},
			{Type: session.PartText, Text: largeText(11, 32<<10)},
		}}))
		snap := sessiontest.Snap(t, s)
		want := encode(t, snap)
		f.append(w, uint64(i+1), snap)
		kept := snap // a deep copy, to compare with
		kept.Messages = append(sessnap.Messages(nil), snap.Messages...)
		for j := range kept.Messages {
			kept.Messages[j] = kept.Messages[j].Clone()
		}
		// The caller's bytes, changed after the append (its parts' Data
		// is what it gave the store).
		for _, m := range snap.Messages {
			for _, p := range m.Parts {
				for k := range p.Data {
					p.Data[k] ^= 0xff
				}
			}
		}
		require.True(t, want == encode(t, f.load("copied").Snapshot), "the store kept a reference to the appended content")
		for _, m := range snap.Messages { // restored, for the next revision
			for _, p := range m.Parts {
				for k := range p.Data {
					p.Data[k] ^= 0xff
				}
			}
		}
		snaps = append(snaps, kept)
	}
	rec := f.load("copied")
	mutate(&rec.Snapshot)
	requireSameLarge(t, snaps[1], f.load("copied").Snapshot, "mutating a loaded record changed the store")
	hist := f.history("copied")
	require.Len(t, hist, 3)
	mutate(&hist[1].Snapshot)
	requireSameLarge(t, snaps[1], hist[2].Snapshot, "records of one History share content")
	mutate(&hist[2].Snapshot)
	requireSameLarge(t, snaps[0], f.history("copied")[1].Snapshot, "mutating a History record changed the store")
}

// requireSameLarge is requireSameSnap for snapshots too large to print:
// it says where their encodings differ.
func requireSameLarge(t *testing.T, want, got sessnap.Snapshot, msgAndArgs ...any) {
	t.Helper()
	a, b := encode(t, want), encode(t, got)
	if a == b {
		return
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-40)
	require.Fail(t, fmt.Sprintf("snapshots differ at byte %d of %d (want %d): …%.80q… vs …%.80q…", i, len(b), len(a), a[lo:], b[lo:]), msgAndArgs...)
}
