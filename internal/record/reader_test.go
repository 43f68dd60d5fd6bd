package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
)

// logBuilder writes the lines of a test log: a growing conversation whose
// revisions are written as full records or deltas.
type logBuilder struct {
	t     testing.TB
	snaps [][]byte
	lines [][]byte
	at    time.Time
}

func newLogBuilder(t testing.TB, n int) *logBuilder {
	return &logBuilder{t: t, snaps: growingSnapshots(n), at: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (b *logBuilder) meta(rev uint64, kind string) Meta {
	return Meta{Version: VersionOf(kind), Schema: 1, Rev: rev, Gen: 1, Time: b.at.Add(time.Duration(rev) * time.Second), Kind: kind}
}

// add appends revision len(lines)+1 as kind (full or delta).
func (b *logBuilder) add(kind string) *logBuilder {
	rev := uint64(len(b.lines) + 1)
	payload := b.snaps[rev-1]
	if kind == KindDelta {
		d, ok := Diff(b.snaps[rev-2], payload)
		require.True(b.t, ok)
		payload = d
	}
	b.lines = append(b.lines, Encode(b.meta(rev, kind), payload))
	return b
}

func (b *logBuilder) bytes() []byte { return bytes.Join(b.lines, nil) }

// offset is the offset of the line of revision rev.
func (b *logBuilder) offset(rev int) int64 { return int64(len(bytes.Join(b.lines[:rev-1], nil))) }

type readResult struct {
	revs []uint64
	tail Tail
	err  error
}

func readAll(t testing.TB, log []byte, seq Seq) readResult {
	t.Helper()
	rd := NewReader("s", 1<<20, seq)
	rd.Read(Source{R: bytes.NewReader(log), Size: int64(len(log)), Path: "s/log.jsonl", Tail: true})
	var res readResult
	snaps := NewSnapshots("s", 1<<20)
	for rd.Next() {
		r := rd.Record()
		res.revs = append(res.revs, r.Rev)
		if err := snaps.Add(r); err != nil {
			res.err = err
			return res
		}
	}
	res.tail, res.err = rd.Tail(), rd.Err()
	return res
}

func TestReader(t *testing.T) {
	clean := newLogBuilder(t, 20).add(KindFull)
	for range 9 {
		clean.add(KindDelta)
	}
	clean.add(KindFull)
	for range 4 {
		clean.add(KindDelta)
	}
	log := clean.bytes()
	newer := Encode(Meta{Version: Version + 1, Schema: 1, Rev: 16, Gen: 1, Time: clean.at.Add(time.Hour), Kind: KindFull}, []byte(`{}`))
	damaged := append([]byte(nil), log...)
	damaged[clean.offset(5)+30] ^= 1
	dup := append(append([]byte(nil), log...), bytes.Join(clean.lines[13:15], nil)...)
	genBack := newLogBuilder(t, 3).add(KindFull).add(KindFull)
	genBack.lines = append(genBack.lines, Encode(Meta{Version: 1, Schema: 1, Rev: 3, Gen: 0, Time: genBack.at.Add(time.Hour), Kind: KindFull}, genBack.snaps[2]))

	tests := []struct {
		name     string
		log      []byte
		wantRevs int
		wantTail int64
		wantErr  error
		wantOff  int64
		wantMsg  string
	}{
		{name: "clean", log: log, wantRevs: 15},
		{name: "torn last append", log: log[:len(log)-20], wantRevs: 14, wantTail: int64(len(clean.lines[14])) - 20},
		{name: "NULs after the last record", log: append(append([]byte(nil), log...), make([]byte, 4096)...), wantRevs: 15, wantTail: 4096},
		{name: "damaged record in the middle", log: damaged, wantRevs: 4, wantErr: sessionstore.ErrCorrupt, wantOff: clean.offset(5), wantMsg: "followed by valid records"},
		{name: "duplicated last lines", log: dup, wantRevs: 15, wantErr: ErrSequence, wantOff: int64(len(log)), wantMsg: "exact copy of revision 14's line at offset " + fmt.Sprint(clean.offset(14))},
		{name: "a newer program's record", log: append(append([]byte(nil), log...), newer...), wantRevs: 15, wantErr: sessionstore.ErrSchemaTooNew, wantOff: int64(len(log))},
		{name: "a newer record after a damaged one is corruption", log: append(append(append([]byte(nil), log...), "garbage\n"...), newer...), wantRevs: 15, wantErr: sessionstore.ErrCorrupt, wantOff: int64(len(log))},
		{name: "generation goes back", log: genBack.bytes(), wantRevs: 2, wantErr: ErrSequence, wantMsg: "generation 0, after generation 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readAll(t, tt.log, Seq{})
			require.Len(t, res.revs, tt.wantRevs)
			if tt.wantErr == nil {
				require.NoError(t, res.err)
				require.Equal(t, tt.wantTail, res.tail.Bytes)
				return
			}
			require.ErrorIs(t, res.err, tt.wantErr)
			var ce *sessionstore.CorruptionError
			var ne *sessionstore.NewerRecordError
			switch {
			case errors.As(res.err, &ce):
				if tt.wantOff > 0 {
					require.Equal(t, tt.wantOff, ce.Offset)
				}
			case errors.As(res.err, &ne):
				require.Equal(t, tt.wantOff, ne.Offset)
				require.Equal(t, uint64(16), ne.Revision)
			default:
				t.Fatalf("untyped error %v", res.err)
			}
			require.Contains(t, res.err.Error(), tt.wantMsg)
		})
	}
}

// TestSnapshotsMatchApplyChain: the snapshot Snapshots keeps as pieces,
// checked by combined checksums, is the one ApplyChain writes out, at every
// revision; a delta whose checksum is wrong is refused.
func TestSnapshotsMatchApplyChain(t *testing.T) {
	b := newLogBuilder(t, 60).add(KindFull)
	for range 59 {
		b.add(KindDelta)
	}
	rd := NewReader("s", 1<<20, Seq{})
	log := b.bytes()
	rd.Read(Source{R: bytes.NewReader(log), Size: int64(len(log)), Path: "log", Tail: true})
	snaps := NewSnapshots("s", 1<<20)
	for rd.Next() {
		r := rd.Record()
		require.NoError(t, snaps.Add(r))
		require.Equal(t, string(b.snaps[r.Rev-1]), string(snaps.Bytes()), "revision %d", r.Rev)
	}
	require.NoError(t, rd.Err())

	// A wrong checksum, re-framed so the line itself is valid.
	d, ok := Diff(b.snaps[0], b.snaps[1])
	require.True(t, ok)
	bad := bytes.Replace(d, []byte(`"snap_crc":"`), []byte(`"snap_crc":"0`), 1)
	bad = append(bad[:bytes.Index(bad, []byte(`"snap_crc":"`))+len(`"snap_crc":"`)+8], bad[bytes.Index(bad, []byte(`"snap_crc":"`))+len(`"snap_crc":"`)+9:]...)
	snaps = NewSnapshots("s", 1<<20)
	require.NoError(t, snaps.Add(&Rec{Meta: b.meta(1, KindFull), Payload: b.snaps[0]}))
	err := snaps.Add(&Rec{Meta: b.meta(2, KindDelta), Payload: bad, Path: "log", Offset: 99})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int64(99), ce.Offset)
	require.ErrorIs(t, err, ErrDelta)
	require.False(t, snaps.Known())
}

func TestBackLast(t *testing.T) {
	b := newLogBuilder(t, 6).add(KindFull).add(KindDelta).add(KindDelta).add(KindFull).add(KindDelta).add(KindDelta)
	log := b.bytes()
	back := NewBack(bytes.NewReader(log), int64(len(log)), "s", "log", 1<<20)
	last, tail, err := back.Last()
	require.NoError(t, err)
	require.Equal(t, uint64(6), last.Rev)
	require.Zero(t, tail.Bytes)
	full, deltas, err := back.ChainTo(last, true)
	require.NoError(t, err)
	require.Equal(t, uint64(4), full.Rev)
	require.Len(t, deltas, 2)
	snap, err := ApplyChain(full.Payload, [][]byte{deltas[0].Payload, deltas[1].Payload}, 1<<20)
	require.NoError(t, err)
	require.Equal(t, string(b.snaps[5]), string(snap))

	// A torn append: one partial line.
	torn := append(append([]byte(nil), log...), b.lines[2][:40]...)
	back = NewBack(bytes.NewReader(torn), int64(len(torn)), "s", "log", 1<<20)
	last, tail, err = back.Last()
	require.NoError(t, err)
	require.Equal(t, uint64(6), last.Rev)
	require.Equal(t, int64(40), tail.Bytes)
	require.NoError(t, ClassifyTail("s", "log", last, tail, Evidence{}, nil))
}

// zeros is a sparse file: size bytes of NULs, counting what is read.
type zeros struct {
	prefix []byte
	size   int64
	read   int64
}

func (z *zeros) ReadAt(p []byte, off int64) (int, error) {
	if off >= z.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.size-off)
	for i := range n {
		if o := off + i; o < int64(len(z.prefix)) {
			p[i] = z.prefix[o]
		} else {
			p[i] = 0
		}
	}
	z.read += n
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// TestBackLastHugeTail: a log grown by a terabyte of holes is damage,
// found by reading a bounded number of bytes, never a tail to copy.
func TestBackLastHugeTail(t *testing.T) {
	b := newLogBuilder(t, 3).add(KindFull).add(KindDelta).add(KindDelta)
	for _, grow := range []int64{TailLimit(1 << 20), 1 << 30, 1 << 40} {
		z := &zeros{prefix: b.bytes(), size: int64(len(b.bytes())) + grow}
		back := NewBack(z, z.size, "s", "log", 1<<20)
		_, _, err := back.Last()
		var ce *sessionstore.CorruptionError
		require.ErrorAs(t, err, &ce, "grown by %d", grow)
		require.Contains(t, ce.Error(), "hold no valid record")
		require.LessOrEqual(t, z.read, TailLimit(1<<20)+2*ScanChunk, "grown by %d", grow)
	}
	// Just within the limit, the NULs are a tail.
	z := &zeros{prefix: b.bytes(), size: int64(len(b.bytes())) + 8192}
	last, tail, err := NewBack(z, z.size, "s", "log", 1<<20).Last()
	require.NoError(t, err)
	require.Equal(t, uint64(3), last.Rev)
	require.Equal(t, int64(8192), tail.Bytes)
}

// TestBackChainToDuplicates: the records a holder builds on are checked as
// a sequence, so a log whose last lines were duplicated is refused.
func TestBackChainToDuplicates(t *testing.T) {
	for _, kind := range []string{KindFull, KindDelta} {
		for k := 1; k <= 8; k++ {
			b := newLogBuilder(t, 16).add(KindFull)
			for range 15 {
				b.add(kind)
			}
			log := append(b.bytes(), bytes.Join(b.lines[16-k:], nil)...)
			back := NewBack(bytes.NewReader(log), int64(len(log)), "s", "log", 1<<20)
			last, _, err := back.Last()
			require.NoError(t, err)
			_, _, err = back.ChainTo(last, true)
			require.ErrorIs(t, err, ErrSequence, "%s records, last %d lines duplicated", kind, k)
			require.Contains(t, err.Error(), "a repeated revision")
		}
	}
}

func TestClassifyTail(t *testing.T) {
	b := newLogBuilder(t, 4).add(KindFull).add(KindFull).add(KindFull)
	log := b.bytes()
	back := NewBack(bytes.NewReader(log), int64(len(log)), "s", "log", 1<<20)
	last, tail, err := back.Last()
	require.NoError(t, err)
	at := func(off int64) (*Rec, error) {
		l := log[off:]
		l = l[:bytes.IndexByte(l, '\n')]
		m, p, err := Parse(l, 1<<20)
		return &Rec{Meta: m, Payload: p, Offset: off}, err
	}
	require.NoError(t, ClassifyTail("s", "log", last, tail, Evidence{Revision: 3, Offset: b.offset(3)}, at))
	require.NoError(t, ClassifyTail("s", "log", last, tail, Evidence{Revision: 2, Offset: b.offset(2)}, at))
	// Evidence of a later revision: the log lost records.
	require.ErrorIs(t, ClassifyTail("s", "log", last, tail, Evidence{Revision: 4, Offset: 9999, Source: "summary.json"}, at), sessionstore.ErrCorrupt)
	// Evidence that places revision 3 elsewhere names another file.
	require.NoError(t, ClassifyTail("s", "log", last, tail, Evidence{Revision: 3, Offset: b.offset(2)}, at))
	// A log whose end repeats the evidenced record.
	dup := append(append([]byte(nil), log...), b.lines[2]...)
	back = NewBack(bytes.NewReader(dup), int64(len(dup)), "s", "log", 1<<20)
	dlast, dtail, err := back.Last()
	require.NoError(t, err)
	require.ErrorContains(t, ClassifyTail("s", "log", dlast, dtail, Evidence{Revision: 3, Offset: b.offset(3), Source: "summary.json"}, back.At), "repeats earlier records")

	// Two damaged lines are more than a torn append.
	two := append(append([]byte(nil), log...), "xx\nyy\n"...)
	back = NewBack(bytes.NewReader(two), int64(len(two)), "s", "log", 1<<20)
	last, tail, err = back.Last()
	require.NoError(t, err)
	require.ErrorContains(t, ClassifyTail("s", "log", last, tail, Evidence{}, nil), "2 damaged lines")

	// CRLF line endings are named.
	crlf := bytes.ReplaceAll(log, []byte("\n"), []byte("\r\n"))
	back = NewBack(bytes.NewReader(crlf), int64(len(crlf)), "s", "log", 1<<20)
	last, tail, err = back.Last()
	require.NoError(t, err)
	require.Nil(t, last)
	err = ClassifyTail("s", "log", last, tail, Evidence{}, nil)
	require.ErrorIs(t, err, ErrCRLF)
	require.ErrorContains(t, err, "sed -i")
}
