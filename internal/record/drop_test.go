package record

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dropSeeds is how many seeds TestTrackerDropsMessages runs:
// SESSIONSTORE_DROP_SEEDS, else 30.
func dropSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("SESSIONSTORE_DROP_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 30
}

// TestTrackerDropsMessages: a conversation that grows and is rewound at
// random (by one message, or back into a full record's pages), with a
// head that changes now and then and a tracker resumed from its chain
// now and then, is written so that a reader rebuilds every revision byte
// for byte (pages expanded), the tracker's own picture is that revision,
// and Conversation counts its messages; a rewind is a small format-5
// delta unless the cut is inside a page (then ErrDropInPage, and the
// shorter array is written whole).
func TestTrackerDropsMessages(t *testing.T) {
	drops, inPage := 0, 0
	for seed := range dropSeeds() {
		d, p := trackDrops(t, uint64(seed))
		drops, inPage = drops+d, inPage+p
	}
	require.Positive(t, drops, "rewinds written as drops")
	require.Positive(t, inPage, "rewinds into a page")
}

func trackDrops(t *testing.T, seed uint64) (drops, inPage int) {
	const maxRecord = 8 << 10
	rng := rand.New(rand.NewPCG(seed, 7))
	pages := &memPages{}
	tr := Tracker{Pages: pages}
	rd := NewSnapshots("s", maxRecord)
	var conv Conversation
	m := Meta{Version: Version1, Schema: 1, Gen: 1, Time: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	var msgs []string
	state := "idle"
	var full []byte
	var deltas [][]byte
	held := 0
	next := 0
	prev := ""
	for step := range 300 {
		m.Rev = uint64(step + 1)
		drop := 0
		var add []string
		switch r := rng.IntN(10); {
		case r < 6 || len(msgs) == 0:
			for range 1 + rng.IntN(4) {
				add = append(add, fmt.Sprintf(`{"role":"user","n":%d,"text":"%s"}`, next, strings.Repeat("z", rng.IntN(400))))
				next++
			}
		case r < 9:
			drop = 1
		default:
			drop = 1 + rng.IntN(len(msgs))
		}
		drop = min(drop, len(msgs))
		if rng.IntN(5) == 0 {
			state = []string{"idle", "running"}[rng.IntN(2)]
		}
		msgs = append(msgs[:len(msgs)-drop:len(msgs)-drop], add...)
		want := `{"id":"s","state":"` + state + `","messages":[` + strings.Join(msgs, ",") + `]}`
		appendElems := make([][]byte, len(add))
		for i, a := range add {
			appendElems[i] = []byte(a)
		}
		head := func(messages Member) []Member {
			return []Member{{Key: []byte(`"id"`), Value: []byte(`"s"`)}, {Key: []byte(`"state"`), Value: []byte(`"` + state + `"`)}, messages}
		}
		pieces := head(Member{Key: []byte(`"messages"`), Grown: true, Drop: drop, Append: appendElems})
		if !tr.Known() {
			pieces = head(Member{Key: []byte(`"messages"`), Value: []byte("[" + strings.Join(msgs, ",") + "]")})
		}
		line, err := tr.Next(m, pieces, maxRecord, Versions{})
		if errors.Is(err, ErrDropInPage) {
			inPage++
			require.True(t, prev == string(expanded(t, tr.Snapshot(), pages)), "seed %d step %d: the tracker is unchanged by a refused drop", seed, step)
			pieces = head(Member{Key: []byte(`"messages"`), Value: []byte("[" + strings.Join(msgs, ",") + "]")})
			line, err = tr.Next(m, pieces, maxRecord, Versions{})
		}
		require.NoError(t, err, "seed %d step %d", seed, step)
		got, payload, err := Parse(line[:len(line)-1], maxRecord)
		require.NoError(t, err)
		if got.Kind == KindDelta && strings.Contains(string(payload), `"drop":{`) {
			drops++
			require.Equal(t, Version5, got.Version, "a delta that drops is format 5")
			require.Less(t, len(line), 256, "a rewind's delta is small")
		}
		require.NoError(t, rd.Add(&Rec{Meta: got, Payload: payload, LineLen: int64(len(line))}), "seed %d step %d", seed, step)
		require.True(t, want == string(expanded(t, rd.Bytes(), pages)), "seed %d step %d: the reader", seed, step)
		require.True(t, want == string(expanded(t, tr.Snapshot(), pages)), "seed %d step %d: the tracker", seed, step)
		prev = want
		n, _, err := conv.Apply(got.Kind, payload)
		require.NoError(t, err)
		require.Equal(t, len(msgs), n, "seed %d step %d: Conversation's count", seed, step)
		if got.Kind == KindFull {
			full, deltas, held = payload, nil, 0
		} else {
			deltas, held = append(deltas, payload), held+len(line)
		}
		if rng.IntN(13) == 0 {
			// A writer that resumes the chain from the log: its lists come
			// without indexes.
			tr = Tracker{Pages: pages}
			require.NoError(t, tr.Resume(full, deltas, held))
		}
	}
	return drops, inPage
}

func expanded(t *testing.T, snap []byte, pages *memPages) []byte {
	t.Helper()
	b, err := ExpandPages(snap, pages.fetch)
	require.NoError(t, err)
	return b
}

// TestApplyDrop: a delta's drop removes the last messages of an array
// (a page reference counts its page's messages) and is refused when it
// ends inside a page, asks for more than the array holds, or is not a
// positive count.
func TestApplyDrop(t *testing.T) {
	page := string(EncodePage(PageRef{SHA256: strings.Repeat("a", 64), Messages: 3, Size: 10}))
	base := `{"messages":[` + page + `,{"m":4},{"m":5}],"x":1}`
	apply := func(drop string, n int) ([]byte, error) {
		d, err := newDoc([]byte(base))
		require.NoError(t, err)
		ops, err := parseDelta([]byte(`{"snap_len":0,"snap_crc":"00000000","drop":{"messages":` + drop + `}}`))
		if err != nil {
			return nil, err
		}
		_ = n
		if err := d.apply(opsWithLen(ops, -1), 1<<20); err != nil {
			return nil, err
		}
		return d.appendTo(nil), nil
	}
	got, err := apply("1", 0)
	require.NoError(t, err)
	require.Equal(t, `{"messages":[`+page+`,{"m":4}],"x":1}`, string(got))
	got, err = apply("2", 0)
	require.NoError(t, err)
	require.Equal(t, `{"messages":[`+page+`],"x":1}`, string(got))
	got, err = apply("5", 0)
	require.NoError(t, err)
	require.Equal(t, `{"messages":[],"x":1}`, string(got))
	_, err = apply("3", 0)
	require.ErrorIs(t, err, ErrDropInPage)
	_, err = apply("6", 0)
	require.ErrorIs(t, err, ErrDelta)
	for _, bad := range []string{"0", "-1", "01", `"1"`, "1.5"} {
		_, err = apply(bad, 0)
		require.Error(t, err, bad)
	}
}

// TestApplyDropSeeds: the drop seeds of FuzzApplyDelta apply as written
// (the valid ones rebuild their result; the others are refused).
func TestApplyDropSeeds(t *testing.T) {
	page := string(EncodePage(PageRef{SHA256: strings.Repeat("b", 64), Messages: 2, Size: 9}))
	for _, c := range []struct {
		base, result, ops string
		ok                bool
	}{
		{`{"messages":[{"m":1},{"m":2},{"m":3}],"x":1}`, `{"messages":[{"m":1}],"x":1}`, `"drop":{"messages":2}`, true},
		{`{"messages":[` + page + `,{"m":3}]}`, `{"messages":[` + page + `]}`, `"drop":{"messages":1}`, true},
		{`{"messages":[` + page + `,{"m":3}]}`, `{"messages":[]}`, `"drop":{"messages":3}`, true},
		{`{"messages":[` + page + `,{"m":3}]}`, `{"messages":[]}`, `"drop":{"messages":2}`, false},
		{`{"messages":[ {"m":1} , {"m":2} ]}`, `{"messages":[ {"m":1}]}`, `"drop":{"messages":1}`, true},
		{`{"messages":[{"m":1},{"m":2}]}`, `{"messages":[{"m":1},{"m":9}]}`, `"drop":{"messages":1},"append":{"messages":[{"m":9}]}`, true},
		{`{"messages":[{"m":1}]}`, `{"messages":[]}`, `"drop":{"messages":4}`, false},
	} {
		out, err := Apply([]byte(c.base), []byte(fmt.Sprintf(`{"snap_len":%d,"snap_crc":"%08x",%s}`, len(c.result), crcOf([]byte(c.result)), c.ops)), 1<<16)
		if c.ok {
			require.NoError(t, err, c.ops)
			require.Equal(t, c.result, string(out))
		} else {
			require.Error(t, err, c.ops)
		}
	}
}
