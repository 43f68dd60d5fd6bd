package record

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDiffApply(t *testing.T) {
	tests := []struct {
		name       string
		prev, next string
		wantDelta  string // "" : no delta (ok false)
	}{
		{
			name:      "set in place",
			prev:      `{"id":"a","state":"idle","counters":{"turns":1},"messages":[]}`,
			next:      `{"id":"a","state":"running","counters":{"turns":1},"messages":[]}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","set":{"state":"running"}}`,
		},
		{
			name:      "append to a non-empty array keeps big integers verbatim",
			prev:      `{"id":"a","messages":[{"n":9007199254740993,"text":"a long message, longer than the delta's header"}],"usage":{"in":1}}`,
			next:      `{"id":"a","messages":[{"n":9007199254740993,"text":"a long message, longer than the delta's header"},{"n":12345678901234567890}],"usage":{"in":2}}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","set":{"usage":{"in":2}},"append":{"messages":[{"n":12345678901234567890}]}}`,
		},
		{
			name:      "append to an empty array",
			prev:      `{"id":"a","messages":[],"title":"a rather long title, so that the delta is smaller"}`,
			next:      `{"id":"a","messages":[1,2],"title":"a rather long title, so that the delta is smaller"}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","append":{"messages":[1,2]}}`,
		},
		{
			name:      "remove a key",
			prev:      `{"id":"a","pending":{"q":"ok?"},"title":"a rather long title, so that the delta is smaller"}`,
			next:      `{"id":"a","title":"a rather long title, so that the delta is smaller"}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","del":["pending"]}`,
		},
		{
			name:      "a new key at the end needs no order",
			prev:      `{"id":"a","title":"a rather long title, so that the delta is smaller"}`,
			next:      `{"id":"a","title":"a rather long title, so that the delta is smaller","x":1}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","set":{"x":1}}`,
		},
		{
			name:      "a new key in the middle lists the order",
			prev:      `{"id":"a","title":"a rather long title, so that the delta is smaller, really much smaller"}`,
			next:      `{"id":"a","x":1,"title":"a rather long title, so that the delta is smaller, really much smaller"}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","keys":["id","x","title"],"set":{"x":1}}`,
		},
		{
			name:      "unchanged",
			prev:      `{"id":"a","title":"a rather long title, so that the delta is smaller"}`,
			next:      `{"id":"a","title":"a rather long title, so that the delta is smaller"}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%"}`,
		},
		{
			name:      "escaped quotes and backslashes in strings",
			prev:      `{"id":"a\\\"}\\","t":"x\\","title":"a rather long title, so that the delta is smaller"}`,
			next:      `{"id":"a\\\"}\\","t":"y\"","title":"a rather long title, so that the delta is smaller"}`,
			wantDelta: `{"snap_len":#,"snap_crc":"%","set":{"t":"y\""}}`,
		},
		{name: "not smaller", prev: `{"a":1}`, next: `{"a":2}`},
		{name: "next not compact", prev: `{"id":"a","title":"a rather long title, so that the delta is smaller"}`, next: `{"id":"a", "title":"a rather long title, so that the delta is smaller"}`},
		{name: "duplicate key", prev: `{"id":"a","title":"a rather long title, so that the delta is smaller"}`, next: `{"id":"a","id":"b","title":"a rather long title, so that the delta is smaller"}`},
		{name: "not an object", prev: `[1,2,3]`, next: `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := Diff([]byte(tt.prev), []byte(tt.next))
			if tt.wantDelta == "" {
				require.False(t, ok, "delta %s", d)
				return
			}
			require.True(t, ok)
			crc := string(appendHex8(nil, crcOf([]byte(tt.next))))
			want := strings.Replace(tt.wantDelta, "%", crc, 1)
			want = strings.Replace(want, "#", strconv.Itoa(len(tt.next)), 1)
			require.Equal(t, want, string(d))
			got, err := Apply([]byte(tt.prev), d, len(tt.next))
			require.NoError(t, err)
			require.Equal(t, tt.next, string(got))
			_, err = Apply([]byte(tt.prev), d, len(tt.next)-1)
			require.ErrorIs(t, err, ErrTooLong, "the cap holds")
		})
	}
}

func TestApplyRefuses(t *testing.T) {
	base := []byte(`{"id":"a","messages":[1],"n":2}`)
	tests := []struct{ name, delta string }{
		{"empty", ``},
		{"not JSON", `{"snap_len":3`},
		{"no header", `{"set":{"n":3}}`},
		{"header out of order", `{"snap_crc":"00000000","snap_len":31}`},
		{"unknown key", `{"snap_len":31,"snap_crc":"00000000","nope":1}`},
		{"leading zero", `{"snap_len":031,"snap_crc":"00000000"}`},
		{"wrong length", `{"snap_len":30,"snap_crc":"00000000"}`},
		{"wrong checksum", `{"snap_len":31,"snap_crc":"00000000"}`},
		{"del absent key", `{"snap_len":31,"snap_crc":"00000000","del":["x"]}`},
		{"append to non-array", `{"snap_len":31,"snap_crc":"00000000","append":{"n":[1]}}`},
		{"append nothing", `{"snap_len":31,"snap_crc":"00000000","append":{"messages":[]}}`},
		{"keys not a permutation", `{"snap_len":31,"snap_crc":"00000000","keys":["id","id","n"]}`},
		{"result above the cap", `{"snap_len":1000000,"snap_crc":"00000000"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Apply(base, []byte(tt.delta), 1000)
			require.Error(t, err)
		})
	}
	ok := `{"snap_len":31,"snap_crc":"` + string(appendHex8(nil, crcOf(base))) + `"}`
	got, err := Apply(base, []byte(ok), 1000)
	require.NoError(t, err)
	require.Equal(t, base, got)
}

// TestApplyChain checks that a chain applied at once gives what applying
// its deltas one by one gives, and that the cap holds for intermediates.
func TestApplyChain(t *testing.T) {
	snaps := growingSnapshots(50)
	var deltas [][]byte
	for i := 1; i < len(snaps); i++ {
		d, ok := Diff(snaps[i-1], snaps[i])
		require.True(t, ok, "revision %d", i)
		deltas = append(deltas, d)
	}
	got, err := ApplyChain(snaps[0], deltas, 1<<20)
	require.NoError(t, err)
	require.Equal(t, string(snaps[len(snaps)-1]), string(got))
	for n := 1; n < len(deltas); n += 7 {
		got, err := ApplyChain(snaps[0], deltas[:n], 1<<20)
		require.NoError(t, err)
		require.Equal(t, string(snaps[n]), string(got))
	}
	_, err = ApplyChain(snaps[0], deltas, len(snaps[len(snaps)/2]))
	require.ErrorIs(t, err, ErrTooLong)
	// A chain missing a delta does not rebuild.
	_, err = ApplyChain(snaps[0], append(slicesClone(deltas[:10]), deltas[11:]...), 1<<20)
	require.ErrorIs(t, err, ErrDelta)
}

func slicesClone(b [][]byte) [][]byte { return append([][]byte(nil), b...) }

// growingSnapshots returns n snapshot-like objects: each adds a message and
// changes counters; now and then a key appears or goes.
func growingSnapshots(n int) [][]byte {
	var out [][]byte
	var msgs []string
	for i := range n {
		msgs = append(msgs, `{"role":"user","parts":[{"type":"text","text":"`+strings.Repeat("x", 40+i)+`"}]}`)
		var b strings.Builder
		b.WriteString(`{"format":"sessnap/v1","id":"01J","state":"running","counters":{"turns":`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`},"messages":[` + strings.Join(msgs, ",") + `]`)
		if i%5 == 3 {
			b.WriteString(`,"pending":{"q":"may I?"}`)
		}
		b.WriteString(`,"usage":{"input_tokens":` + strconv.Itoa(i*1000) + `}}`)
		out = append(out, []byte(b.String()))
	}
	return out
}

// seedSnapshots are the committed sessnap fixtures.
func seedSnapshots(tb testing.TB) [][]byte {
	files, err := filepath.Glob("../../testdata/sessnap/*.json")
	require.NoError(tb, err)
	require.NotEmpty(tb, files)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(tb, err)
		out = append(out, bytes.TrimSpace(b))
	}
	return out
}

// FuzzApplyDelta: Apply never panics and never returns more than maxOut
// bytes, whatever base and delta hold.
func FuzzApplyDelta(f *testing.F) {
	snaps := seedSnapshots(f)
	grow := growingSnapshots(8)
	for i := 1; i < len(grow); i++ {
		d, _ := Diff(grow[i-1], grow[i])
		f.Add(grow[i-1], d, 1<<16)
	}
	for i := 1; i < len(snaps); i++ {
		f.Add(snaps[i-1], []byte(`{"snap_len":10,"snap_crc":"00000000","keys":["id"],"del":["a"],"set":{"a":1},"append":{"m":[1]}}`), 1<<16)
	}
	f.Add([]byte(`{"a":[[[[[[[[]]]]]]]]}`), []byte(`{"snap_len":40,"snap_crc":"00000000","append":{"a":[1]}}`), 40)
	// Drops (format 5): valid ones, one that ends inside a page, one past
	// the array's start, one on arrays with whitespace, one with an append.
	page := string(EncodePage(PageRef{SHA256: strings.Repeat("b", 64), Messages: 2, Size: 9}))
	for _, c := range []struct{ base, result, ops string }{
		{`{"messages":[{"m":1},{"m":2},{"m":3}],"x":1}`, `{"messages":[{"m":1}],"x":1}`, `"drop":{"messages":2}`},
		{`{"messages":[` + page + `,{"m":3}]}`, `{"messages":[` + page + `]}`, `"drop":{"messages":1}`},
		{`{"messages":[` + page + `,{"m":3}]}`, `{"messages":[]}`, `"drop":{"messages":2}`},
		{`{"messages":[ {"m":1} , {"m":2} ]}`, `{"messages":[ {"m":1}]}`, `"drop":{"messages":1}`},
		{`{"messages":[{"m":1},{"m":2}]}`, `{"messages":[{"m":1},{"m":9}]}`, `"drop":{"messages":1},"append":{"messages":[{"m":9}]}`},
		{`{"messages":[{"m":1}]}`, `{"messages":[]}`, `"drop":{"messages":4}`},
	} {
		f.Add([]byte(c.base), []byte(fmt.Sprintf(`{"snap_len":%d,"snap_crc":"%08x",%s}`, len(c.result), crcOf([]byte(c.result)), c.ops)), 1<<16)
	}
	f.Fuzz(func(t *testing.T, base, delta []byte, maxOut int) {
		if maxOut < 0 || maxOut > 1<<20 {
			return
		}
		out, err := Apply(base, delta, maxOut)
		if err != nil {
			require.Nil(t, out)
			return
		}
		require.LessOrEqual(t, len(out), maxOut)
		require.Equal(t, crcOf(out), mustOps(t, delta).snapCRC)
	})
}

func mustOps(t *testing.T, delta []byte) deltaOps {
	ops, err := parseDelta(delta)
	require.NoError(t, err)
	return ops
}

// FuzzDiffApply: whenever Diff gives a delta, Apply turns prev into next
// exactly, and the delta is smaller than next.
func FuzzDiffApply(f *testing.F) {
	snaps := seedSnapshots(f)
	for i := 1; i < len(snaps); i++ {
		f.Add(snaps[i-1], snaps[i])
	}
	grow := growingSnapshots(8)
	for i := 1; i < len(grow); i++ {
		f.Add(grow[i-1], grow[i])
	}
	f.Fuzz(func(t *testing.T, prev, next []byte) {
		d, ok := Diff(prev, next)
		if !ok {
			return
		}
		require.Less(t, len(d), len(next))
		got, err := Apply(prev, d, len(next))
		require.NoError(t, err)
		require.Equal(t, next, got)
	})
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, Castagnoli) }
