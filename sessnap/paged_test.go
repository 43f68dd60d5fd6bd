package sessnap_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/sessnap"
)

// A stored conversation's elements are decoded where they lie, the record
// and its pages (record.Unpage, sessnap.UnmarshalElements), never copied
// into one array: these tests hold that to decoding the expanded snapshot
// (record.ExpandPages, sessnap.Unmarshal).

// paginated returns doc, a snapshot's JSON, with the elements of its
// messages array cut into runs by cuts (each byte a run's length, 1 to
// 64; its high bit keeps the run inline, else the run is a page), the
// pages' contents by hash, and whether doc had a messages array to cut.
// damage (its low bits) makes the first page's reference or content
// wrong, as ExpandPages must refuse.
func paginated(doc, cuts []byte, damage byte) ([]byte, map[string][]byte, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil || top["messages"] == nil {
		return doc, nil, false
	}
	raw := []byte(top["messages"])
	var elems [][]byte
	if record.Elements(raw, func(e []byte) error { elems = append(elems, e); return nil }) != nil {
		return doc, nil, false
	}
	pages := map[string][]byte{}
	var out [][]byte
	first := true
	for i := 0; len(elems) > 0; i++ {
		c := byte(0x7f)
		if len(cuts) > 0 {
			c = cuts[i%len(cuts)]
		}
		n := min(len(elems), 1+int(c&0x3f))
		run := elems[:n]
		elems = elems[n:]
		if c&0x80 != 0 {
			out = append(out, run...)
			continue
		}
		content := bytes.Join(run, []byte{','})
		ref := record.PageRef{Messages: n, Size: int64(len(content))}
		if first && damage&1 != 0 {
			ref.Messages++
		}
		if first && damage&2 != 0 {
			content = append(content, ',')
			ref.Size++
		}
		sum := sha256.Sum256(content)
		ref.SHA256 = hex.EncodeToString(sum[:])
		pages[ref.SHA256] = content
		out = append(out, record.EncodePage(ref))
		first = false
	}
	arr := append(append([]byte{'['}, bytes.Join(out, []byte{','})...), ']')
	return bytes.Replace(doc, raw, arr, 1), pages, true
}

// fetchFrom is a page fetch from pages.
func fetchFrom(pages map[string][]byte) func(record.PageRef) ([]byte, error) {
	return func(p record.PageRef) ([]byte, error) {
		b, ok := pages[p.SHA256]
		if !ok {
			return nil, fmt.Errorf("no page %s", p.SHA256)
		}
		return b, nil
	}
}

// decodeUnpaged decodes u as a store does: its elements in place, or its
// head as it is.
func decodeUnpaged(u record.Unpaged) (sessnap.Snapshot, error) {
	if u.At < 0 {
		return sessnap.Unmarshal(u.Head)
	}
	return sessnap.UnmarshalElements(u.Head, u.At, u.Elems)
}

// samePaged checks that snap, with pages from fetch, is refused by Unpage
// exactly when ExpandPages refuses it, and otherwise decodes from its
// elements as its expansion decodes: the same snapshot or the same error.
func samePaged(t testing.TB, snap []byte, fetch func(record.PageRef) ([]byte, error)) (decoded bool) {
	t.Helper()
	u, uerr := record.Unpage(snap, fetch)
	exp, eerr := record.ExpandPages(snap, fetch)
	if eerr != nil || uerr != nil {
		require.Error(t, uerr, "Unpage accepted what ExpandPages refuses (%v): %q", eerr, snap)
		require.Error(t, eerr, "Unpage refused what ExpandPages accepts (%v): %q", uerr, snap)
		require.Equal(t, eerr.Error(), uerr.Error())
		return false
	}
	require.Equal(t, string(exp), string(u.Expand()))
	want, werr := sessnap.Unmarshal(exp)
	got, gerr := decodeUnpaged(u)
	if werr != nil {
		require.Error(t, gerr, "decoded from its elements what its expansion does not decode (%v): %q", werr, snap)
		require.Equal(t, werr.Error(), gerr.Error())
		return false
	}
	require.NoError(t, gerr, "%q", snap)
	require.Equal(t, want, got, "decoded differently: %q", snap)
	return true
}

// TestPagedDecodesAsExpanded: the snapshots writers write, their messages
// cut into pages and inline runs in many ways, decode from their elements
// on the fast path, as their expansion decodes, long ones (on every core)
// included.
func TestPagedDecodesAsExpanded(t *testing.T) {
	for seed := range uint64(120) {
		doc := writerSnapshot(t, seed, 20)
		cuts := []byte{byte(seed), byte(seed*7 + 3), 0x80 | byte(seed*13), byte(seed * 31)}
		want, err := sessnap.Unmarshal(doc)
		require.NoError(t, err)
		snap, pages, ok := paginated(doc, cuts, 0)
		require.True(t, ok)
		if len(want.Messages) == 0 {
			continue // nothing to cut
		}
		require.True(t, record.MayHavePages(snap), "seed %d: no page cut", seed)
		require.True(t, samePaged(t, snap, fetchFrom(pages)), "seed %d", seed)
		u, err := record.Unpage(snap, fetchFrom(pages))
		require.NoError(t, err)
		require.GreaterOrEqual(t, u.At, 0)
		fast, ok := sessnap.UnmarshalElementsFast(u.Head, u.At, u.Elems)
		require.True(t, ok, "seed %d: the fast decoder declined a conversation the encoder wrote", seed)
		require.Equal(t, want, fast, "seed %d", seed)
	}
}

// TestPagedParallelMatchesSerial: a long paged conversation decoded from
// its elements on one core and on several gives the same messages.
func TestPagedParallelMatchesSerial(t *testing.T) {
	for seed := range uint64(6) {
		doc := richSnapshot(t, 2000+seed, 30, 3000)
		snap, pages, _ := paginated(doc, []byte{byte(seed), 0x85, 40}, 0)
		u, err := record.Unpage(snap, fetchFrom(pages))
		require.NoError(t, err)
		par, ok := sessnap.UnmarshalElementsFast(u.Head, u.At, u.Elems)
		require.True(t, ok)
		prev := runtime.GOMAXPROCS(1)
		ser, ok := sessnap.UnmarshalElementsFast(u.Head, u.At, u.Elems)
		runtime.GOMAXPROCS(prev)
		require.True(t, ok)
		require.Equal(t, ser, par)
	}
}

// TestPagedEdges: damaged pages are refused as ExpandPages refuses them;
// elements the fast decoder declines, and arguments that do not describe
// a messages array, decode (or fail) as their joined bytes do.
func TestPagedEdges(t *testing.T) {
	doc := richSnapshot(t, 7, 40, 0)
	for damage := range byte(4) {
		snap, pages, _ := paginated(doc, []byte{3, 0x82, 5}, damage)
		require.Equal(t, damage == 0, samePaged(t, snap, fetchFrom(pages)), "damage %d", damage)
	}
	snap, _, _ := paginated(doc, []byte{3}, 0)
	require.False(t, samePaged(t, snap, fetchFrom(nil)), "a missing page")
	for sub, decodes := range map[string]bool{`"parts":null`: true, `"role":"tool","role":"user"`: true, `"r\u006fle":"user"`: true, "\xff": false} {
		// In a page (the first run) and inline (the last).
		bad := bytes.Replace(doc, []byte(`"role":"user"`), []byte(sub), 1)
		i := bytes.LastIndex(bad, []byte(`"role":"user"`))
		bad = append(bad[:i:i], append([]byte(sub), bad[i+len(`"role":"user"`):]...)...)
		snap, pages, ok := paginated(bad, []byte{3, 0x82, 5}, 0)
		require.True(t, ok || !decodes, sub)
		require.Equal(t, decodes, samePaged(t, snap, fetchFrom(pages)), sub)
		if u, err := record.Unpage(snap, fetchFrom(pages)); err == nil && u.At >= 0 {
			_, fast := sessnap.UnmarshalElementsFast(u.Head, u.At, u.Elems)
			require.False(t, fast, "the fast decoder took %s", sub)
		}
	}
	head := []byte(`{"id":"s","messages":[],"state":"idle"}`)
	at := bytes.Index(head, []byte("[]"))
	for _, bad := range []int{-1, 0, at + 1, len(head) - 1, len(head)} {
		_, err := sessnap.UnmarshalElements(head, bad, nil)
		require.ErrorIs(t, err, sessnap.ErrMalformed, "at %d", bad)
	}
	_, err := sessnap.UnmarshalElements(head, at, [][]byte{[]byte("{\"role\":\"\xff\"}")})
	require.ErrorIs(t, err, sessnap.ErrMalformed)
	_, err = sessnap.UnmarshalElements(head, at, [][]byte{[]byte(`{"role":"user"}`), []byte(`]`)})
	require.ErrorIs(t, err, sessnap.ErrMalformed)
}

// FuzzPagedUnmarshal holds decoding from pages to decoding the expanded
// snapshot on any input: a snapshot (cut into pages as cuts say, when it
// has a messages array; damage spoils the first page) or any bytes with
// page references of any content.
func FuzzPagedUnmarshal(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir)
	require.NoError(f, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		require.NoError(f, err)
		f.Add(b, []byte{2, 0x81}, byte(0))
	}
	for seed := range uint64(5) {
		f.Add(richSnapshot(f, seed, 12, 3), []byte{byte(seed), 0x80}, byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc, cuts []byte, damage byte) {
		snap, pages, ok := paginated(doc, cuts, damage)
		if ok {
			samePaged(t, snap, fetchFrom(pages))
		}
		// doc itself, every page it references holding cuts.
		samePaged(t, doc, func(record.PageRef) ([]byte, error) { return cuts, nil })
	})
}
