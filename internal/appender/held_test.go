package appender

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// resumed writes snaps with one appender (the holder before), then
// returns an appender resumed from the chain those lines end with, as a
// store's next holder resumes (Resume), the lines, and the stored
// revision's messages decoded as a reader decodes them without their
// content (references in place of content kept out of line).
func resumed(t testing.TB, ext *memExt, snaps []sessnap.Snapshot) (*Appender, [][]byte, sessnap.Messages) {
	a, lines, light, _ := resumedBeside(t, ext, snaps)
	return a, lines, light
}

// resumedBeside is resumed, with the appender that wrote the lines (which
// knows the messages it stored, as a writer that never stopped does).
func resumedBeside(t testing.TB, ext *memExt, snaps []sessnap.Snapshot) (*Appender, [][]byte, sessnap.Messages, *Appender) {
	t.Helper()
	before := New(ext, 1<<24, false)
	var lines [][]byte
	var recs []*record.Rec
	for i, snap := range snaps {
		m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(i + 1), Gen: 1, Time: sessiontest.Epoch}
		line, err := before.Line("a", m, &snap)
		require.NoError(t, err)
		lines = append(lines, line)
		got, payload, err := record.Parse(line[:len(line)-1], 1<<24)
		require.NoError(t, err)
		recs = append(recs, &record.Rec{Meta: got, Payload: payload, LineLen: int64(len(line))})
	}
	start := 0
	for i, r := range recs {
		if r.Kind == record.KindFull {
			start = i
		}
	}
	a := New(ext, 1<<24, false)
	require.NoError(t, a.Resume(recs[start], recs[start+1:]))
	stored, err := sessnap.Unmarshal(a.Snapshot())
	require.NoError(t, err)
	return a, lines, stored.Messages, before
}

// resumeMsg is message i: text, every third one long enough to go out of
// line (memExt: 1 KiB).
func resumeMsg(i int) session.Message {
	text := fmt.Sprintf("message %d", i)
	if i%3 == 0 {
		text = strings.Repeat(text+" ", 200)
	}
	return session.TextMessage(session.RoleUser, text, sessiontest.Epoch.Add(time.Duration(i)*time.Second))
}

func grownSnaps(t testing.TB, n int) (*session.Session, []sessnap.Snapshot) {
	s := sessiontest.New("a")
	var out []sessnap.Snapshot
	for i := range n {
		require.NoError(t, s.AppendMessage(resumeMsg(i)))
		out = append(out, sessiontest.Snap(t, s))
	}
	return s, out
}

// TestHeldFirstAppendIsADelta: an appender resumed from a chain and given
// the stored messages — with their content (Latest), or decoded without
// it (Stored) — writes its first append of one new message as a delta,
// and the revision rebuilds exactly. Without them, it is a full record.
func TestHeldFirstAppendIsADelta(t *testing.T) {
	for _, how := range []string{"content", "references", "stored", "none"} {
		t.Run(how, func(t *testing.T) {
			ext := &memExt{m: map[string][]byte{}}
			s, snaps := grownSnaps(t, 10)
			a, lines, light := resumed(t, ext, snaps)
			switch how {
			case "content":
				require.True(t, a.Hold(snaps[len(snaps)-1].Messages))
			case "references":
				require.True(t, a.Hold(light))
			case "stored":
				a.Stored = func() (sessnap.Messages, error) { return light, nil }
			}
			require.NoError(t, s.AppendMessage(resumeMsg(10)))
			next := sessiontest.Snap(t, s)
			m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 2, Time: sessiontest.Epoch}
			line, err := a.Line("a", m, &next)
			require.NoError(t, err)
			got, _, err := record.Parse(line[:len(line)-1], 1<<24)
			require.NoError(t, err)
			want := record.KindDelta
			if how == "none" {
				want = record.KindFull
			}
			require.Equal(t, want, got.Kind)
			lines = append(lines, line)
			require.Equal(t, encode(t, next), encode(t, replay(t, lines, ext)))
		})
	}
}

// TestHeldRecognisesOnlyTheSameContent: a next snapshot whose earlier
// message differs from the held one — in inline text, or in content the
// stored revision keeps out of line (same size, other bytes) — is not
// taken for the stored one: its revision rebuilds with the change.
func TestHeldRecognisesOnlyTheSameContent(t *testing.T) {
	for _, which := range []int{1, 3} { // inline; out of line
		ext := &memExt{m: map[string][]byte{}}
		_, snaps := grownSnaps(t, 6)
		a, lines, light := resumed(t, ext, snaps)
		require.True(t, a.Hold(light))
		next := snaps[len(snaps)-1]
		next.Messages = append(sessnap.Messages(nil), next.Messages...)
		changed := next.Messages[which].Clone()
		b := []byte(changed.Parts[0].Text)
		b[len(b)-2] ^= 1 // same size, other bytes
		changed.Parts[0].Text = string(b)
		next.Messages[which] = changed
		next.Messages = append(next.Messages, resumeMsg(6))
		m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 2, Time: sessiontest.Epoch}
		line, err := a.Line("a", m, &next)
		require.NoError(t, err)
		lines = append(lines, line)
		require.Equal(t, encode(t, next), encode(t, replay(t, lines, ext)), "message %d changed", which)
	}
}

// FuzzHeldAppend: whatever the stored session and whatever the next
// snapshot (messages appended, an earlier one changed or not, content in
// and out of line), an appender resumed and given the stored messages
// without their content writes the very line the appender that stored
// them would have written (a delta exactly when it would write one), and
// that line rebuilds the next snapshot exactly.
func FuzzHeldAppend(f *testing.F) {
	f.Add(uint8(5), uint8(1), uint8(0), uint8(0), []byte("x"))
	f.Add(uint8(9), uint8(3), uint8(4), uint8(1), []byte("changed"))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(2), []byte{})
	f.Add(uint8(12), uint8(2), uint8(3), uint8(3), []byte("a"))
	f.Fuzz(func(t *testing.T, stored, added, at, edit uint8, text []byte) {
		n := 1 + int(stored)%20
		ext := &memExt{m: map[string][]byte{}}
		_, snaps := grownSnaps(t, n)
		a, lines, light, before := resumedBeside(t, ext, snaps)
		require.True(t, a.Hold(light))
		next := snaps[len(snaps)-1]
		next.Messages = append(sessnap.Messages(nil), next.Messages...)
		if i := int(at) % n; edit%4 != 0 {
			changed := next.Messages[i].Clone()
			switch edit % 4 {
			case 1: // other text
				changed.Parts[0].Text = string(text) + "."
			case 2: // the same text, other memory
				changed.Parts[0].Text = strings.Clone(changed.Parts[0].Text)
			case 3: // the text long enough to go out of line, or not
				changed.Parts[0].Text = strings.Repeat(string(text)+"-", 1200/(len(text)+1)+1)
			}
			next.Messages[i] = changed
		}
		for k := range int(added) % 5 {
			next.Messages = append(next.Messages, resumeMsg(n+k))
		}
		m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 2, Time: sessiontest.Epoch}
		line, err := a.Line("a", m, &next)
		want, werr := before.Line("a", m, &next)
		require.Equal(t, werr == nil, err == nil, "the resumed appender refuses what its predecessor refuses: %v, %v", err, werr)
		if err != nil {
			return // an invalid snapshot (text that is not UTF-8)
		}
		require.Equal(t, string(want), string(line), "the resumed appender's line is the one its predecessor would have written")
		lines = append(lines, line)
		require.Equal(t, encode(t, next), encode(t, replay(t, lines, ext)))
	})
}

// TestHeldRewindIsADrop: an appender resumed from a chain and given the
// stored messages (with their content, decoded without it, or on demand)
// recognises a next conversation that is their first k messages in other
// memory — a resumed handle's rewind or pop — by what the messages hold,
// and writes a delta that drops the rest; one whose kept messages differ
// in one byte is written with its conversation whole. Either revision
// rebuilds exactly.
func TestHeldRewindIsADrop(t *testing.T) {
	for _, how := range []string{"content", "references", "stored"} {
		for _, keep := range []int{0, 1, 4, 9} {
			for _, changed := range []bool{false, true} {
				if changed && keep < 2 {
					continue
				}
				name := fmt.Sprintf("%s/keep=%d/changed=%v", how, keep, changed)
				ext := &memExt{m: map[string][]byte{}}
				_, snaps := grownSnaps(t, 10)
				a, lines, light := resumed(t, ext, snaps)
				switch how {
				case "content":
					require.True(t, a.Hold(Copy(snaps[len(snaps)-1].Messages)), name)
				case "references":
					require.True(t, a.Hold(light), name)
				case "stored":
					a.Stored = func() (sessnap.Messages, error) { return light, nil }
				}
				next := snaps[len(snaps)-1]
				next.Messages = Copy(next.Messages[:keep])
				if changed {
					c := next.Messages[keep-2]
					b := []byte(c.Parts[0].Text)
					b[len(b)-1] ^= 1 // same size, other bytes
					c.Parts[0].Text = string(b)
					next.Messages[keep-2] = c
				}
				m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 2, Time: sessiontest.Epoch}
				line, err := a.Line("a", m, &next)
				require.NoError(t, err, name)
				got, _, err := record.Parse(line[:len(line)-1], 1<<24)
				require.NoError(t, err, name)
				drop := fmt.Sprintf(`"drop":{"messages":%d}`, 10-keep)
				if changed {
					require.NotContains(t, string(line), `"drop"`, name)
				} else {
					require.Equal(t, record.KindDelta, got.Kind, name)
					require.Contains(t, string(line), drop, name)
					require.NotContains(t, string(line), `"set"`, name)
					require.NotContains(t, string(line), `"append"`, name)
				}
				lines = append(lines, line)
				require.Equal(t, encode(t, next), encode(t, replay(t, lines, ext)), name)
			}
		}
	}
}

// TestHeldNotScannedAgain: the first append after a resume scans for
// secrets only what the stored revision does not hold. The stored
// messages it begins with are the records' (redacted when they were
// written; here a store written with redaction off keeps a secret) and
// are not scanned again: the append is a delta of the new message, its
// secret replaced, and the stored message stays as stored. A message the
// caller changed makes the snapshot no continuation of the stored one:
// the whole of it is scanned (and written in a full record).
func TestHeldNotScannedAgain(t *testing.T) {
	const old, fresh = "AKIA" + "QW3ER5TY7UI2OP4A", "ghp_" + "Zq3Xv8Lm2Pw5Rt9Ny4Bk7Hd1Fs6Gj0Ca3UeQ"
	r, err := redact.New(redact.Options{})
	require.NoError(t, err)
	for _, how := range []string{"content", "stored", "changed"} {
		t.Run(how, func(t *testing.T) {
			ext := &memExt{m: map[string][]byte{}}
			s := sessiontest.New("a")
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "deploy with "+old, sessiontest.Epoch)))
			var snaps []sessnap.Snapshot
			for i := 1; i < 6; i++ {
				require.NoError(t, s.AppendMessage(resumeMsg(i)))
				snaps = append(snaps, sessiontest.Snap(t, s))
			}
			a, lines, light := resumed(t, ext, snaps)
			a.Redact = redact.NewStream(r)
			switch how {
			case "content", "changed":
				a.HoldCopy(snaps[len(snaps)-1].Messages)
			case "stored":
				a.Stored = func() (sessnap.Messages, error) { return light, nil }
			}
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, "and "+fresh, sessiontest.Epoch.Add(time.Hour))))
			next := sessiontest.Snap(t, s)
			if how == "changed" {
				next.Messages = append(sessnap.Messages(nil), next.Messages...)
				next.Messages[1] = session.TextMessage(session.RoleUser, "now with "+fresh, sessiontest.Epoch.Add(time.Second))
			}
			m := record.Meta{Schema: sessnap.SchemaVersion, Rev: uint64(len(lines) + 1), Gen: 2, Time: sessiontest.Epoch}
			line, err := a.Line("a", m, &next)
			require.NoError(t, err)
			got, _, err := record.Parse(line[:len(line)-1], 1<<24)
			require.NoError(t, err)
			want := record.KindDelta
			if how == "changed" {
				want = record.KindFull // not a continuation of the stored messages
			}
			require.Equal(t, want, got.Kind)
			require.NotContains(t, string(line), fresh, "the new message's secret is replaced")
			lines = append(lines, line)
			stored := replay(t, lines, ext)
			require.Equal(t, encode(t, next), encode(t, stored), "what was written is the redacted snapshot")
			if how == "changed" {
				// Not a continuation: the whole snapshot is scanned.
				require.NotContains(t, stored.Messages[0].Parts[0].Text, old)
			} else {
				require.Contains(t, stored.Messages[0].Parts[0].Text, old, "the stored message is not scanned again")
			}
			last := stored.Messages[len(stored.Messages)-1].Parts[0].Text
			require.Equal(t, "and "+redact.Placeholder("github-token", fresh), last)
			if how == "changed" {
				require.Equal(t, "now with "+redact.Placeholder("github-token", fresh), stored.Messages[1].Parts[0].Text, "a changed message is scanned")
			}
		})
	}
}
