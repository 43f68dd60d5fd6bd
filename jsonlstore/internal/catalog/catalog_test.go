package catalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/session"
)

// sample returns a catalog of n entries, every field set somewhere.
func sample(t testing.TB, n int) *File {
	f := &File{ID: 0x1234_5678_9abc_def0, Written: 1_764_410_401_123_456_789, MarksDev: 65024, MarksIno: 99}
	if n > 1 {
		f.Kept = []string{MarkName("s-0001", 3), MarkName("s-0000", 7)} // not in order: Encode sorts
	}
	for i := range n {
		e := Entry{
			ID:       session.SessionID(fmt.Sprintf("s-%04d", (i*37)%n)), // not in order: Encode sorts
			Log:      LogState{Dev: 65024, Ino: uint64(1000 + i), Size: int64(997 + i), Mtime: 1_764_410_400_000_000_000 + int64(i)},
			Revision: uint64(i + 1), Created: time.Unix(1_764_400_000, 123456789).UTC(), Updated: time.Unix(1_764_410_000, int64(i)).UTC(),
			State: session.StateRunning, Kind: session.KindPrimary,
			Summary: fmt.Appendf(nil, `{"id":"s-%04d","revision":%d}`, (i*37)%n, i+1),
		}
		switch i % 4 {
		case 1:
			e.ParentID, e.Project = "s-0000", "/src/app"
			require.NoError(t, e.SetLabels(map[string]string{"team": "tools", "pinned": "", "example.com/ticket": "T-1"}))
		case 2:
			e.Unreadable, e.Summary = true, []byte("log.jsonl: permission denied")
		case 3:
			e.State, e.Kind, e.Project = session.StateStopped, session.KindSubagent, "/src/ünïcode"
			e.Created = time.Time{} // the zero time survives too
		}
		f.Entries = append(f.Entries, e)
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 7, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f := sample(t, n)
			b, err := Encode(f)
			require.NoError(t, err)
			got, err := Decode(bytes.NewReader(b), int64(len(b)))
			require.NoError(t, err)
			require.Equal(t, f.ID, got.ID)
			require.Equal(t, f.Written, got.Written)
			require.Equal(t, [2]uint64{f.MarksDev, f.MarksIno}, [2]uint64{got.MarksDev, got.MarksIno})
			require.Equal(t, slices.Sorted(slices.Values(f.Kept)), slices.Clip(got.Kept))
			require.Equal(t, n, got.Len())
			for i := range f.Entries {
				want := &f.Entries[i]
				e, err := got.Entry(i)
				require.NoError(t, err)
				require.Equal(t, want.ID, got.EntryID(i))
				created, updated := got.Times(i)
				require.True(t, created.Equal(want.Created) && updated.Equal(want.Updated))
				require.Equal(t, want.Log, got.Log(i))
				require.Equal(t, want.ID, e.ID)
				require.Equal(t, want.Unreadable, e.Unreadable)
				require.Equal(t, want.Log, e.Log)
				require.Equal(t, want.Revision, e.Revision)
				require.True(t, want.Created.Equal(e.Created) && want.Updated.Equal(e.Updated))
				require.Equal(t, want.Created.IsZero(), e.Created.IsZero())
				require.Equal(t, []string{string(want.State), string(want.Kind), string(want.ParentID), want.Project},
					[]string{string(e.State), string(e.Kind), string(e.ParentID), e.Project})
				require.Equal(t, want.Labels(), e.Labels())
				require.Equal(t, want.HasLabels(), e.HasLabels())
				sum, err := got.Summary(i)
				require.NoError(t, err)
				require.Equal(t, want.Summary, sum)
				require.Equal(t, i, got.Find(e.ID))
			}
			require.Equal(t, -1, got.Find("absent"))
		})
	}
}

// TestEncodeRefuses: what the format cannot hold is an error, not a
// catalog that says something else.
func TestEncodeRefuses(t *testing.T) {
	for name, f := range map[string]*File{
		"ID 0":      {Entries: []Entry{{ID: "a"}}},
		"twice":     {ID: 1, Entries: []Entry{{ID: "a"}, {ID: "a"}}},
		"long kind": {ID: 1, Entries: []Entry{{ID: "a", Kind: session.SessionKind(bytes.Repeat([]byte("k"), 256))}}},
		"summary":   {ID: 1, Entries: []Entry{{ID: "a", Summary: make([]byte, MaxSummaryBytes+1)}}},
	} {
		_, err := Encode(f)
		require.Error(t, err, name)
	}
	var e Entry
	require.Error(t, e.SetLabels(map[string]string{string(bytes.Repeat([]byte("k"), 256)): ""}))
}

// TestDamage: every truncation, and a flip of any byte of the header or
// the entries, is ErrDamaged; a flip in a summary is caught when that
// summary is read.
func TestDamage(t *testing.T) {
	b, err := Encode(sample(t, 9))
	require.NoError(t, err)
	f, err := Decode(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	sumStart := f.sumBase
	for n := range len(b) {
		_, err := Decode(bytes.NewReader(b[:n]), int64(n))
		require.ErrorIs(t, err, ErrDamaged, "truncated to %d", n)
	}
	_, err = Decode(bytes.NewReader(append(bytes.Clone(b), 0)), int64(len(b)+1))
	require.ErrorIs(t, err, ErrDamaged, "one byte more")
	for i := range len(b) {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		got, err := Decode(bytes.NewReader(c), int64(len(c)))
		if int64(i) < sumStart {
			require.ErrorIs(t, err, ErrDamaged, "byte %d", i)
			continue
		}
		require.NoError(t, err, "byte %d of the summaries", i)
		bad := 0
		for j := range got.Len() {
			if _, err := got.Summary(j); err != nil {
				require.ErrorIs(t, err, ErrDamaged)
				bad++
			}
		}
		require.Equal(t, 1, bad, "byte %d: one summary fails its checksum", i)
	}
}

// TestNewer: a higher version with a valid checksum is a newer program's,
// a lower one is damage.
func TestNewer(t *testing.T) {
	b, err := Encode(sample(t, 3))
	require.NoError(t, err)
	for v, want := range map[uint32]error{Version + 1: ErrNewer, 0: ErrDamaged} {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[8:], v)
		binary.LittleEndian.PutUint32(c[84:], crc32.Checksum(c[:84], castagnoli))
		_, err := Decode(bytes.NewReader(c), int64(len(c)))
		require.ErrorIs(t, err, want, "version %d", v)
	}
	r := EncodeRoot(Root{Catalog: 1})
	binary.LittleEndian.PutUint32(r[8:], Version+1)
	_, err = DecodeRoot(r)
	require.ErrorIs(t, err, ErrNewer)
}

func TestRoot(t *testing.T) {
	r := Root{Catalog: 42, Dir: DirState{Dev: 1, Ino: 2, Nlink: 10002, Size: 258048, Mtime: 3, Ctime: 4}, Observed: 5}
	b := EncodeRoot(r)
	require.Len(t, b, RootSize)
	got, err := DecodeRoot(b)
	require.NoError(t, err)
	require.Equal(t, r, got)
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 1
		_, err := DecodeRoot(c)
		require.Error(t, err, "byte %d", i)
	}
	for n := range len(b) {
		_, err := DecodeRoot(b[:n])
		require.ErrorIs(t, err, ErrDamaged)
	}
}

func TestSettled(t *testing.T) {
	d := DirState{Mtime: 10 * SettleTime, Ctime: 10*SettleTime + 5}
	require.False(t, Settled(d, 11*SettleTime), "within SettleTime of the ctime")
	require.True(t, Settled(d, 11*SettleTime+5))
	require.False(t, Settled(d, 0), "a clock before the change")
}

func TestMarkNames(t *testing.T) {
	for _, tc := range []struct {
		id  session.SessionID
		gen uint64
	}{{"a", 1}, {"01KB3C0000000000000000000A", 18446744073709551615}, {"a.5", 7}, {"x-y_z.", 3}} {
		id, gen, ok := ParseMark(MarkName(tc.id, tc.gen))
		require.True(t, ok, "%s.%d", tc.id, tc.gen)
		require.Equal(t, tc.id, id)
		require.Equal(t, tc.gen, gen)
	}
	for _, name := range []string{"", "a", ".5", "a.", "a.0", "a.05", "a.+5", "a.-5", "a.x", ".tmp.3", "a b.3", "a.18446744073709551616"} {
		_, _, ok := ParseMark(name)
		require.False(t, ok, "%q", name)
	}
}

// FuzzDecode: whatever the bytes, Decode and Summary never panic, and a
// catalog that decodes encodes to the same entries.
func FuzzDecode(f *testing.F) {
	for _, n := range []int{0, 1, 5} {
		b, err := Encode(sample(f, n))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewer) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		for i := range got.Len() {
			_, _ = got.Summary(i)
			if e, err := got.Entry(i); err == nil {
				_ = e.Labels()
				_ = e.ValidID()
			} else if !errors.Is(err, ErrDamaged) {
				t.Fatalf("unclassified error %v", err)
			}
		}
	})
}

// TestDecodeRandom feeds Decode random mutations of a valid catalog, over
// many seeds: each is refused as damaged (or decodes, for flips in a
// summary), never a panic.
func TestDecodeRandom(t *testing.T) {
	b, err := Encode(sample(t, 20))
	require.NoError(t, err)
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 1))
		c := bytes.Clone(b)
		for range 1 + r.IntN(4) {
			c[r.IntN(len(c))] = byte(r.UintN(256))
		}
		if r.IntN(3) == 0 {
			c = c[:r.IntN(len(c))]
		}
		got, err := Decode(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			require.ErrorIs(t, err, ErrDamaged, "seed %d", seed)
			continue
		}
		for i := range got.Len() {
			_, _ = got.Summary(i)
			_, _ = got.Entry(i)
		}
	}
}
