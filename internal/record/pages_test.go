package record

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memPages is a PageStore in memory, counting the pages it is given.
type memPages struct {
	m    map[string][]byte
	puts int
}

func (p *memPages) PutPage(content []byte) (string, error) {
	if p.m == nil {
		p.m = map[string][]byte{}
	}
	sum := sha256.Sum256(content)
	h := hex.EncodeToString(sum[:])
	p.m[h] = append([]byte(nil), content...)
	p.puts++
	return h, nil
}

func (p *memPages) fetch(ref PageRef) ([]byte, error) {
	b, ok := p.m[ref.SHA256]
	if !ok {
		return nil, fmt.Errorf("no page %s", ref.SHA256)
	}
	return b, nil
}

// TestTrackerPagesFullRecords: with a PageStore, a tracker writing a
// growing conversation keeps every record and every snapshot it rebuilds
// within the cap however long the conversation grows; the snapshot with its
// pages expanded is every revision byte for byte; a page, once made, is
// kept by every later full record, so each is made once and no message is
// in two pages.
func TestTrackerPagesFullRecords(t *testing.T) {
	const maxRecord = 8 << 10
	snaps := growingSnapshots(400) // the last is about 40 KiB: five times the cap
	pages := &memPages{}
	tr := Tracker{Pages: pages}
	m := Meta{Version: Version1, Schema: 1, Gen: 1, Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), Kind: KindFull}
	rd := NewSnapshots("s", maxRecord)
	prevN := -1
	fulls, paged := 0, 0
	for i, want := range snaps {
		m.Rev = uint64(i + 1)
		pieces, n := piecesOf(t, want, prevN)
		if !tr.Known() {
			pieces, _ = piecesOf(t, want, -1)
		}
		line, err := tr.Next(m, pieces, maxRecord, Versions{})
		require.NoError(t, err, "revision %d", i+1)
		require.LessOrEqual(t, len(line), maxRecord)
		got, payload, err := Parse(line[:len(line)-1], maxRecord)
		require.NoError(t, err)
		if got.Kind == KindFull {
			fulls++
			if MayHavePages(payload) {
				paged++
				require.Equal(t, Version4, got.Version, "a full record with pages is format 4")
			}
		}
		require.NoError(t, rd.Add(&Rec{Meta: got, Payload: payload, LineLen: int64(len(line))}), "revision %d", i+1)
		expanded, err := ExpandPages(rd.Bytes(), pages.fetch)
		require.NoError(t, err)
		require.Equal(t, string(want), string(expanded), "revision %d", i+1)
		prevN = n
	}
	require.Greater(t, paged, 3, "full records with pages")
	stored := 0
	for _, b := range pages.m {
		stored += len(b)
	}
	last := snaps[len(snaps)-1]
	require.Less(t, stored, len(last), "no message is in two pages")
	require.Equal(t, pages.puts, len(pages.m), "a growing conversation keeps its pages: each is made once")
}

// TestPaginateIsPrefixStable: paginating a conversation, then the longer
// one its pages and tail start, gives what paginating the longer one from
// nothing gives.
func TestPaginateIsPrefixStable(t *testing.T) {
	var elems [][]byte
	for i := range 500 {
		elems = append(elems, []byte(fmt.Sprintf(`{"role":"user","n":%d,"text":"%s"}`, i, strings.Repeat("y", i%97))))
	}
	for _, cut := range []int{0, 1, 77, 250, 499} {
		ps := &memPages{}
		first, _, err := paginate(elems[:cut], ps, 1<<10)
		require.NoError(t, err)
		again, _, err := paginate(append(append([][]byte(nil), first...), elems[cut:]...), ps, 1<<10)
		require.NoError(t, err)
		whole, _, err := paginate(elems, ps, 1<<10)
		require.NoError(t, err)
		require.Equal(t, joinArray(whole), joinArray(again), "cut at %d", cut)
	}
}

// TestPagesSplitAndExpand: SplitPages keeps the inline messages and lists
// the references in order; WithMessages gives a page's own snapshot;
// ExpandPages refuses a page that is not what its reference says.
func TestPagesSplitAndExpand(t *testing.T) {
	ps := &memPages{}
	sum, _ := ps.PutPage([]byte(`{"m":1},{"m":2}`))
	ref := PageRef{SHA256: sum, Messages: 2, Size: 15}
	snap := []byte(`{"id":"a","messages":[` + string(EncodePage(ref)) + `,{"m":3}],"state":"idle"}`)

	inline, refs, err := SplitPages(snap)
	require.NoError(t, err)
	require.Equal(t, `{"id":"a","messages":[{"m":3}],"state":"idle"}`, string(inline))
	require.Equal(t, []PageRef{ref}, refs)
	page, err := WithMessages(inline, ps.m[sum])
	require.NoError(t, err)
	require.Equal(t, `{"id":"a","messages":[{"m":1},{"m":2}],"state":"idle"}`, string(page))
	out, err := ExpandPages(snap, ps.fetch)
	require.NoError(t, err)
	require.Equal(t, `{"id":"a","messages":[{"m":1},{"m":2},{"m":3}],"state":"idle"}`, string(out))
	var seen []PageRef
	require.NoError(t, Pages(snap, func(p PageRef) { seen = append(seen, p) }))
	require.Equal(t, refs, seen)
	_, _, lead, err := SplitLeading(snap)
	require.NoError(t, err)
	require.True(t, lead, "the page before the inline message")
	after := []byte(`{"id":"a","messages":[{"m":0},` + string(EncodePage(ref)) + `,{"m":3}],"state":"idle"}`)
	inline, refs, lead, err = SplitLeading(after)
	require.NoError(t, err)
	require.False(t, lead, "a page after an inline message")
	require.Equal(t, `{"id":"a","messages":[{"m":0},{"m":3}],"state":"idle"}`, string(inline))
	require.Equal(t, []PageRef{ref}, refs)

	for name, content := range map[string]string{
		"short":         `{"m":1}`,
		"more messages": `{"m":1},{"m":22222}`[:15],
		"page in page":  `{"page":{"a":1}`,
		"fewer":         `{"m":"1,2,3,4"}`,
	} {
		ref := ref
		ref.Size = int64(len(content))
		if name == "short" {
			ref.Size = 15
		}
		_, err := ExpandPages([]byte(`{"messages":[`+string(EncodePage(ref))+`]}`), func(PageRef) ([]byte, error) { return []byte(content), nil })
		require.ErrorIs(t, err, ErrFraming, name)
	}
	for _, bad := range []string{`{"page":{}}`, `{"page":{"sha256":"xyz","messages":1,"size":3}}`, `{"page":{"sha256":"` + sum + `","messages":0,"size":3}}`, `{"page":{"sha256":"` + sum + `"`} {
		_, err := ExpandPages([]byte(`{"messages":[`+bad+`]}`), ps.fetch)
		require.Error(t, err, bad)
	}
	failed := errors.New("no such page")
	_, err = ExpandPages(snap, func(PageRef) ([]byte, error) { return nil, failed })
	require.ErrorIs(t, err, failed)
}

// FuzzExpandPages: whatever the snapshot and the page content, ExpandPages
// and SplitPages return an error or a result, never panic; an expansion
// that succeeds holds no page reference at the top of its messages array.
func FuzzExpandPages(f *testing.F) {
	ps := &memPages{}
	sum, _ := ps.PutPage([]byte(`{"m":1},{"m":2}`))
	ref := string(EncodePage(PageRef{SHA256: sum, Messages: 2, Size: 15}))
	f.Add([]byte(`{"id":"a","messages":[`+ref+`,{"m":3}]}`), []byte(`{"m":1},{"m":2}`))
	f.Add([]byte(`{"messages":[`+ref+`,`+ref+`]}`), []byte(`{"m":1},{"m":2}`))
	f.Add([]byte(`{"messages":[{"page":{"sha256":"`+sum+`","messages":1,"size":9}}]}`), []byte(`{"page":1}`))
	f.Fuzz(func(t *testing.T, snap, content []byte) {
		out, err := ExpandPages(snap, func(PageRef) ([]byte, error) { return content, nil })
		if err == nil {
			_ = Pages(out, func(PageRef) { t.Fatalf("a page survived expansion: %q", out) })
		}
		inline, refs, err := SplitPages(snap)
		if err == nil && refs != nil {
			_, again, err := SplitPages(inline)
			if err == nil && again != nil {
				t.Fatalf("split left a page: %q", inline)
			}
		}
	})
}
