package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionstore/sessionstore/internal/blob"
)

// A long conversation's full record would outgrow the record cap, so a
// writer keeps the older messages of a full record in pages: runs of
// message elements stored out of line as one blob each (content-addressed,
// like part content), and referenced from the messages array by an element
// of their own:
//
//	"messages":[{"page":{"sha256":"<64 hex>","messages":812,"size":1048990}},…,{"role":"user",…},…]
//
// The page's content is its messages' JSON elements joined by commas, as
// they stood in the array (its size and SHA-256 are those bytes), so the
// conversation is the array with each page reference replaced by the
// elements it holds (ExpandPages). Deltas only append to the array, so
// pages are made when a full record is written, and the same run of
// messages makes the same page again: a page is stored once.

// PageRef is a page reference: the SHA-256 and size of the page's content
// and how many messages it holds.
type PageRef struct {
	SHA256   string `json:"sha256"`
	Messages int    `json:"messages"`
	Size     int64  `json:"size"`
}

var pagePrefix = []byte(`{"page":{`)

// messagesKey is the snapshot member that holds the conversation.
const messagesKey = `"messages"`

// IsPage reports whether elem, an element of a messages array, is a page
// reference (a message is an object with a role, never one key "page").
func IsPage(elem []byte) bool { return bytes.HasPrefix(elem, pagePrefix) }

// MayHavePages reports whether snap, a snapshot's JSON, may reference
// pages (false: it certainly does not).
func MayHavePages(snap []byte) bool { return bytes.Contains(snap, pagePrefix) }

// hasPage reports whether the messages array arr holds a page reference.
func hasPage(arr []byte) bool {
	found := false
	_ = eachElement(arr, func(e []byte) error {
		found = found || IsPage(e)
		return nil
	})
	return found
}

// ParsePage decodes a page reference element.
func ParsePage(elem []byte) (PageRef, error) {
	var v struct {
		Page *PageRef `json:"page"`
	}
	if err := json.Unmarshal(elem, &v); err != nil || v.Page == nil {
		return PageRef{}, fmt.Errorf("%w: page reference %.60q", ErrFraming, elem)
	}
	p := *v.Page
	if !blob.ValidHash(p.SHA256) || p.Messages < 1 || p.Size < 2 {
		return PageRef{}, fmt.Errorf("%w: page reference %.60q", ErrFraming, elem)
	}
	return p, nil
}

// EncodePage returns a page reference element.
func EncodePage(p PageRef) []byte {
	b, _ := json.Marshal(struct {
		Page PageRef `json:"page"`
	}{p}) // a struct of a string and numbers: cannot fail
	return b
}

// PageBytes is the size from which a writer cuts a page (a quarter of the
// record cap when that is less): walking a full record's messages, it puts
// each run of at least that many bytes of message elements after the last
// page into a page of its own, and keeps the rest (less than that) inline.
// The cut is greedy from the first message, so a longer conversation cuts
// its earlier pages at the same places and makes the same pages again. A
// full record holds the snapshot without its messages, the inline tail,
// and about 120 bytes per page: within a 16 MiB cap, over 30 GiB of
// messages. The size bounds what a full record costs the log (its inline
// tail), and so how soon the chain policy can end a chain (Tracker,
// MaxChainDeltas; FORMAT.md "Chains"): with 1 MiB pages a session grown
// by short messages held chains of about 4,000 deltas, which every load
// and every resume's recovery applied.
const PageBytes = 256 << 10

// pageLimit is the size from which a writer with record cap maxRecord cuts
// a page.
func pageLimit(maxRecord int) int { return max(1, min(PageBytes, maxRecord/4)) }

// PageStore stores pages (Tracker.Pages): PutPage makes content, a page's
// bytes, durable under its SHA-256 (the hex string it returns) before the
// record that references it is written, unless it is there already.
type PageStore interface {
	PutPage(content []byte) (sha256 string, err error)
}

// paginate returns elems, a full record's message elements (messages, and
// pages an earlier full record made), with every run of at least limit
// bytes of messages after the last page replaced by a page stored in ps,
// and whether it holds a page.
func paginate(elems [][]byte, ps PageStore, limit int) ([][]byte, bool, error) {
	out := make([][]byte, 0, len(elems))
	paged := false
	run, runBytes := 0, 0 // out[run:] is the run of messages since the last page
	for _, e := range elems {
		if IsPage(e) {
			out = append(out, e)
			run, runBytes, paged = len(out), 0, true
			continue
		}
		out = append(out, e)
		if runBytes += len(e) + 1; runBytes-1 < limit {
			continue
		}
		content := bytes.Join(out[run:], comma)
		sum, err := ps.PutPage(content)
		if err != nil {
			return nil, false, err
		}
		ref := EncodePage(PageRef{SHA256: sum, Messages: len(out) - run, Size: int64(len(content))})
		out = append(out[:run], ref)
		run, runBytes, paged = len(out), 0, true
	}
	return out, paged, nil
}

// ExpandPages returns snap, a snapshot's JSON, with the page references in
// its messages array replaced by the messages they hold; fetch returns a
// page's content (checked against the reference). A snapshot without
// pages is returned as it is. The result is written once: the messages
// are found where they are (snap, the pages' content) and copied straight
// into it (Unpage, Unpaged.Expand).
func ExpandPages(snap []byte, fetch func(PageRef) ([]byte, error)) ([]byte, error) {
	u, err := Unpage(snap, fetch)
	if err != nil {
		return nil, err
	}
	return u.Expand(), nil
}

// Unpaged is a snapshot whose messages array is held as the message
// elements it stands for, each page reference replaced by the elements
// its page holds, left where they are (the snapshot's bytes and the
// pages' contents): what ExpandPages writes out, without writing it. A
// decoder reads the elements in place (sessnap.UnmarshalElements).
type Unpaged struct {
	// Head is the snapshot as ExpandPages writes it, with its messages
	// array empty: "[]" at offset At. At is -1 when ExpandPages returns
	// the snapshot as it is (it holds no page reference, or no messages
	// array): Head is then the snapshot.
	Head []byte
	At   int
	// Elems are the array's elements in order, aliasing the snapshot and
	// the pages' contents.
	Elems [][]byte
}

// Unpage reads snap, a snapshot's JSON, as ExpandPages does, fetching and
// checking its pages (fetch returns a page's content, checked against the
// reference), and refuses what ExpandPages refuses.
func Unpage(snap []byte, fetch func(PageRef) ([]byte, error)) (Unpaged, error) {
	if !MayHavePages(snap) {
		return Whole(snap), nil
	}
	d, m, err := messagesMember(snap)
	switch {
	case err != nil:
		return Unpaged{}, err
	case m == nil:
		return Whole(snap), nil
	}
	var u Unpaged
	add := func(e []byte) error {
		u.Elems = append(u.Elems, e)
		return nil
	}
	err = eachElement(m.val, func(e []byte) error {
		if !IsPage(e) {
			return add(e)
		}
		p, err := ParsePage(e)
		if err != nil {
			return err
		}
		content, err := fetch(p)
		if err != nil {
			return err
		}
		return pageElements(p, content, add)
	})
	if err != nil {
		return Unpaged{}, err
	}
	u.Head = make([]byte, 0, d.size()-len(m.val)+2)
	u.Head = append(u.Head, '{')
	for i, x := range d.members {
		if i > 0 {
			u.Head = append(u.Head, ',')
		}
		u.Head = append(append(u.Head, x.key...), ':')
		if x == m {
			u.At = len(u.Head)
			u.Head = append(u.Head, "[]"...)
		} else {
			u.Head = append(u.Head, x.val...)
		}
	}
	u.Head = append(u.Head, '}')
	return u, nil
}

// Whole is snap, a snapshot's JSON, as an Unpaged that holds it as it is.
func Whole(snap []byte) Unpaged { return Unpaged{Head: snap, At: -1} }

// Expand returns the snapshot u stands for, its elements written into
// its messages array: what ExpandPages returns.
func (u Unpaged) Expand() []byte {
	if u.At < 0 {
		return u.Head
	}
	n := len(u.Head) + len(u.Elems)
	for _, e := range u.Elems {
		n += len(e)
	}
	out := append(make([]byte, 0, n), u.Head[:u.At]...)
	out = appendArray(out, u.Elems)
	return append(out, u.Head[u.At+2:]...)
}

// PageMessages splits content, page p's bytes, into its message elements
// (aliasing content), checking them against the reference (size and
// count; the caller checked the SHA-256).
func PageMessages(p PageRef, content []byte) ([][]byte, error) {
	var msgs [][]byte
	err := pageElements(p, content, func(e []byte) error {
		msgs = append(msgs, e)
		return nil
	})
	return msgs, err
}

// pageElements calls fn with each message element of content, page p's
// bytes (the elements of an array without its brackets), after checking
// the page against its reference's size, and its count after the last.
func pageElements(p PageRef, content []byte, fn func(e []byte) error) error {
	if int64(len(content)) != p.Size {
		return fmt.Errorf("%w: page %s holds %d bytes, its reference says %d", ErrFraming, p.SHA256, len(content), p.Size)
	}
	n := 0
	if err := eachListed(content, func(e []byte) error {
		if IsPage(e) {
			return errors.New("a page inside a page")
		}
		n++
		return fn(e)
	}); err != nil {
		return fmt.Errorf("%w: page %s: %w", ErrFraming, p.SHA256, err)
	}
	if n != p.Messages {
		return fmt.Errorf("%w: page %s holds %d messages, its reference says %d", ErrFraming, p.SHA256, n, p.Messages)
	}
	return nil
}

// Pages calls fn with every page reference in snap's messages array.
func Pages(snap []byte, fn func(PageRef)) error {
	if !MayHavePages(snap) {
		return nil
	}
	d, err := newDoc(snap)
	if err != nil {
		return err
	}
	m := d.index[messagesKey]
	if m == nil {
		return nil
	}
	return eachElement(m.val, func(e []byte) error {
		if IsPage(e) {
			p, err := ParsePage(e)
			if err != nil {
				return err
			}
			fn(p)
		}
		return nil
	})
}

// SplitPages returns snap, a snapshot's JSON, with the page references
// dropped from its messages array (its inline messages only), and the
// references in order. A snapshot without pages is returned as it is.
func SplitPages(snap []byte) ([]byte, []PageRef, error) {
	out, refs, _, err := SplitLeading(snap)
	return out, refs, err
}

// SplitLeading is SplitPages, and reports whether every page reference
// comes before the inline messages, as a writer keeps them (pages are cut
// from the start of the conversation, deltas append): then the
// conversation is the pages' messages in order, then the inline ones.
func SplitLeading(snap []byte) (inlineSnap []byte, refs []PageRef, lead bool, err error) {
	if !MayHavePages(snap) {
		return snap, nil, true, nil
	}
	var inline [][]byte
	lead = true
	out, err := editMessages(snap, func(val []byte) ([]byte, error) {
		err := eachElement(val, func(e []byte) error {
			if !IsPage(e) {
				inline = append(inline, e)
				return nil
			}
			lead = lead && inline == nil
			p, err := ParsePage(e)
			if err == nil {
				refs = append(refs, p)
			}
			return err
		})
		return joinArray(inline), err
	})
	if err != nil || refs == nil {
		return snap, nil, true, err
	}
	return out, refs, lead, nil
}

// WithMessages returns snap with its messages array replaced by the
// message elements content holds (a page's content): the snapshot whose
// conversation is one page's messages.
func WithMessages(snap, content []byte) ([]byte, error) {
	return editMessages(snap, func([]byte) ([]byte, error) {
		v := make([]byte, 0, len(content)+2)
		v = append(v, '[')
		v = append(v, content...)
		return append(v, ']'), nil
	})
}

// editMessages returns snap with its messages array's value replaced by
// what edit makes of it (snap itself when it has none).
func editMessages(snap []byte, edit func(val []byte) ([]byte, error)) ([]byte, error) {
	d, m, err := messagesMember(snap)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return snap, nil
	}
	val, err := edit(m.val)
	if err != nil {
		return nil, err
	}
	m.val = val
	m.resize()
	d.sumOK = false
	return d.appendTo(make([]byte, 0, d.size())), nil
}

// messagesMember parses snap and finds its messages array: m is nil when
// snap has none (or it is not an array), and err is ErrFraming when snap
// is not a JSON object.
func messagesMember(snap []byte) (d *doc, m *member, err error) {
	d, err = newDoc(snap)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot: %w", ErrFraming, err)
	}
	m = d.index[messagesKey]
	if m == nil || len(m.val) == 0 || m.val[0] != '[' {
		return d, nil, nil
	}
	return d, m, nil
}

func joinArray(elems [][]byte) []byte {
	n := 2 + len(elems)
	for _, e := range elems {
		n += len(e)
	}
	return appendArray(make([]byte, 0, n), elems)
}

// appendArray appends the array of elems to v.
func appendArray(v []byte, elems [][]byte) []byte {
	v = append(v, '[')
	for i, e := range elems { // into v directly: no joined copy between
		if i > 0 {
			v = append(v, comma...)
		}
		v = append(v, e...)
	}
	return append(v, ']')
}
