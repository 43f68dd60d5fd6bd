package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// piecesOf describes next as a writer that knows its messages grew from
// prevN elements does: every top-level member of next, the messages
// member as the elements appended.
func piecesOf(t *testing.T, next []byte, prevN int) ([]Member, int) {
	t.Helper()
	d, err := newDoc(next)
	require.NoError(t, err)
	var out []Member
	n := 0
	for _, m := range d.members {
		if string(m.key) == `"messages"` {
			var elems [][]byte
			require.NoError(t, eachElement(m.val, func(e []byte) error { elems = append(elems, e); return nil }))
			n = len(elems)
			out = append(out, Member{Key: m.key, Grown: prevN >= 0, Append: elems[max(prevN, 0):]})
			if prevN < 0 {
				out[len(out)-1] = Member{Key: m.key, Value: m.val}
			}
			continue
		}
		out = append(out, Member{Key: m.key, Value: m.val})
	}
	return out, n
}

// TestTrackerBuildsFromPieces: the records a Tracker builds from pieces
// rebuild every revision byte for byte (a reader applying each delta to
// the previous snapshot), keep within the chain policy, and are mostly
// deltas for a growing conversation.
func TestTrackerBuildsFromPieces(t *testing.T) {
	snaps := growingSnapshots(300)
	var tr Tracker
	m := Meta{Version: Version1, Schema: 1, Gen: 1, Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Kind: KindFull}
	rd := NewSnapshots("s", 1<<20)
	prevN := -1 // unknown: the first record is full
	deltas := 0
	for i, want := range snaps {
		m.Rev = uint64(i + 1)
		pieces, n := piecesOf(t, want, prevN)
		if !tr.Known() {
			pieces, _ = piecesOf(t, want, -1)
		}
		line, err := tr.Next(m, pieces, 1<<20, Versions{})
		require.NoError(t, err)
		got, payload, err := Parse(line[:len(line)-1], 1<<20)
		require.NoError(t, err)
		if got.Kind == KindDelta {
			deltas++
		}
		require.NoError(t, rd.Add(&Rec{Meta: got, Payload: payload, LineLen: int64(len(line))}))
		require.Equal(t, string(want), string(rd.Bytes()), "revision %d", i+1)
		require.Equal(t, string(want), string(tr.Snapshot()), "the tracker's own picture, revision %d", i+1)
		prevN = n
	}
	require.Greater(t, deltas, 250, "a growing conversation is written as deltas")
}

// TestTrackerChangesAndOrder: members that change, appear, go or move are
// set, deleted and reordered, and a full record is refused above the cap.
func TestTrackerChangesAndOrder(t *testing.T) {
	var tr Tracker
	m := Meta{Version: Version1, Schema: 1, Rev: 1, Gen: 1, Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}
	big := `"` + strings.Repeat("x", 3000) + `"`
	first := []Member{{Key: []byte(`"id"`), Value: []byte(`"a"`)}, {Key: []byte(`"big"`), Value: []byte(big)}, {Key: []byte(`"messages"`), Value: []byte(`[]`)}, {Key: []byte(`"state"`), Value: []byte(`"idle"`)}}
	line, err := tr.Next(m, first, 1<<20, Versions{})
	require.NoError(t, err)
	prev := payloadOf(t, line)
	cases := [][]Member{
		{{Key: []byte(`"id"`), Value: []byte(`"a"`)}, {Key: []byte(`"big"`), Value: []byte(big)}, {Key: []byte(`"messages"`), Grown: true, Append: [][]byte{[]byte(`{"m":1}`)}}, {Key: []byte(`"state"`), Value: []byte(`"running"`)}},
		{{Key: []byte(`"id"`), Value: []byte(`"a"`)}, {Key: []byte(`"messages"`), Grown: true}, {Key: []byte(`"big"`), Value: []byte(big)}, {Key: []byte(`"pending"`), Value: []byte(`{"q":1}`)}},
		{{Key: []byte(`"id"`), Value: []byte(`"a"`)}, {Key: []byte(`"big"`), Value: []byte(big)}, {Key: []byte(`"messages"`), Grown: true, Append: [][]byte{[]byte(`{"m":2}`), []byte(`{"m":3}`)}}},
	}
	for i, next := range cases {
		m.Rev = uint64(i + 2)
		line, err := tr.Next(m, next, 1<<20, Versions{})
		require.NoError(t, err)
		got, payload, err := Parse(line[:len(line)-1], 1<<20)
		require.NoError(t, err)
		require.Equal(t, KindDelta, got.Kind, "revision %d", m.Rev)
		snap, err := Apply(prev, payload, 1<<20)
		require.NoError(t, err)
		require.Equal(t, string(tr.Snapshot()), string(snap))
		prev = snap
	}
	require.Equal(t, `{"id":"a","big":`+big+`,"messages":[{"m":1},{"m":2},{"m":3}]}`, string(prev))

	// A full record above the cap is refused and changes nothing.
	var fresh Tracker
	_, err = fresh.Next(m, first, 100, Versions{})
	require.ErrorIs(t, err, ErrFullRecordTooLarge)
	require.False(t, fresh.Known())
}

func payloadOf(t *testing.T, line []byte) []byte {
	t.Helper()
	_, p, err := Parse(bytes.TrimSuffix(line, []byte("\n")), 1<<20)
	require.NoError(t, err)
	return bytes.Clone(p)
}

// TestTrackerChainEndsByWeight: a chain ends at MaxChainDeltas deltas when
// they outweigh FullWeight times its full record, and goes on past it
// while they do not, until they do; so full records add at most
// 1/FullWeight to the log beyond its deltas, however heavy the full record.
func TestTrackerChainEndsByWeight(t *testing.T) {
	const maxRecord = 16 << 20
	elem := []byte(`{"text":"` + strings.Repeat("m", 1000) + `"}`)
	for _, c := range []struct {
		name     string
		big      int
		wantLong bool // the first chain goes past MaxChainDeltas
	}{
		{"light full record", 100 << 10, false},
		{"heavy full record", 1 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tr Tracker
			m := Meta{Version: Version1, Schema: 1, Rev: 1, Gen: 1, Time: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
			big := []byte(`"` + strings.Repeat("x", c.big) + `"`)
			line, err := tr.Next(m, []Member{{Key: []byte(`"big"`), Value: big}, {Key: []byte(`"messages"`), Value: []byte(`[]`)}}, maxRecord, Versions{})
			require.NoError(t, err)
			_, payload, err := Parse(line[:len(line)-1], maxRecord)
			require.NoError(t, err)
			full := len(payload)
			deltas, weight := 0, 0
			for rev := 2; ; rev++ {
				m.Rev = uint64(rev)
				line, err := tr.Next(m, []Member{{Key: []byte(`"big"`), Value: big}, {Key: []byte(`"messages"`), Grown: true, Append: [][]byte{elem}}}, maxRecord, Versions{})
				require.NoError(t, err)
				got, _, err := Parse(line[:len(line)-1], maxRecord)
				require.NoError(t, err)
				if got.Kind == KindFull {
					break
				}
				deltas++
				weight += len(line)
				require.LessOrEqual(t, deltas, HardMaxChainDeltas)
			}
			require.GreaterOrEqual(t, weight, FullWeight*full, "the chain ended while its deltas weighed less than %d× its full record", FullWeight)
			if c.wantLong {
				require.Greater(t, deltas, MaxChainDeltas, "a chain lighter than its full record goes on")
				require.Less(t, weight-2*len(elem), FullWeight*full, "the chain went on past the weight")
			} else {
				require.Equal(t, MaxChainDeltas, deltas)
			}
		})
	}
}

// TestTrackerResumeChecksChain: a tracker resumed from a chain read back
// from a log holds the chain's last snapshot byte for byte, and its next
// delta rebuilds the next one; a chain with any one delta changed (a byte
// of a message it appends, its length kept: what a line's own checksum
// would have to miss) is refused by the check of the rebuilt snapshot
// against the last delta's snap_crc, wherever the change is, and so is a
// chain whose last delta's checksum is changed.
func TestTrackerResumeChecksChain(t *testing.T) {
	snaps := growingSnapshots(60)
	var tr Tracker
	m := Meta{Version: Version1, Schema: 1, Gen: 1, Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}
	var full []byte
	var deltas [][]byte
	held := 0
	prevN := -1
	for i, want := range snaps[:len(snaps)-1] {
		m.Rev = uint64(i + 1)
		pieces, n := piecesOf(t, want, prevN)
		if !tr.Known() {
			pieces, _ = piecesOf(t, want, -1)
		}
		line, err := tr.Next(m, pieces, 1<<20, Versions{})
		require.NoError(t, err)
		got, payload, err := Parse(line[:len(line)-1], 1<<20)
		require.NoError(t, err)
		if got.Kind == KindFull {
			full, deltas, held = bytes.Clone(payload), nil, 0
		} else {
			deltas, held = append(deltas, bytes.Clone(payload)), held+len(line)
		}
		prevN = n
	}
	require.Greater(t, len(deltas), 10)

	var resumed Tracker
	require.NoError(t, resumed.Resume(full, deltas, held))
	require.Equal(t, string(snaps[len(snaps)-2]), string(resumed.Snapshot()))
	m.Rev = uint64(len(snaps))
	pieces, _ := piecesOf(t, snaps[len(snaps)-1], prevN)
	line, err := resumed.Next(m, pieces, 1<<20, Versions{})
	require.NoError(t, err)
	_, payload, err := Parse(line[:len(line)-1], 1<<20)
	require.NoError(t, err)
	next, err := Apply(snaps[len(snaps)-2], payload, 1<<20)
	require.NoError(t, err)
	require.Equal(t, string(snaps[len(snaps)-1]), string(next))

	for i := range deltas {
		damaged := make([][]byte, len(deltas))
		copy(damaged, deltas)
		d := bytes.Clone(deltas[i])
		at := bytes.LastIndex(d, []byte(`"text":"`))
		require.Positive(t, at, "delta %d appends a message", i+1)
		at += len(`"text":"`)
		d[at] ^= 0x01 // another letter, the same length
		damaged[i] = d
		var tr Tracker
		require.ErrorIs(t, tr.Resume(full, damaged, held), ErrDelta, "delta %d of %d changed", i+1, len(deltas))
		require.False(t, tr.Known())
	}
	last := bytes.Clone(deltas[len(deltas)-1])
	at := bytes.Index(last, []byte(`"snap_crc":"`)) + len(`"snap_crc":"`)
	if last[at] == '0' {
		last[at] = '1'
	} else {
		last[at] = '0'
	}
	damaged := append(append([][]byte(nil), deltas[:len(deltas)-1]...), last)
	var bad Tracker
	require.ErrorIs(t, bad.Resume(full, damaged, held), ErrDelta)
}
