package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// IsPage reports whether elem, an element of a messages array, is a page
// reference (a message is an object with a role, never one key "page").
func IsPage(elem []byte) bool { return bytes.HasPrefix(elem, pagePrefix) }

// ParsePage decodes a page reference element.
func ParsePage(elem []byte) (PageRef, error) {
	var v struct {
		Page *PageRef `json:"page"`
	}
	if err := json.Unmarshal(elem, &v); err != nil || v.Page == nil {
		return PageRef{}, fmt.Errorf("%w: page reference %.60q", ErrFraming, elem)
	}
	p := *v.Page
	if len(p.SHA256) != 64 || strings.Trim(p.SHA256, "0123456789abcdef") != "" || p.Messages < 1 || p.Size < 2 {
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

// Pager makes pages (Tracker.Pager): given the elements of a full
// record's messages array — messages, and pages an earlier full record
// made — it returns the elements to write, runs of older messages replaced
// by references to pages it has stored durably (before the record is
// written).
type Pager interface {
	Page(elems [][]byte) ([][]byte, error)
}

// ExpandPages returns snap, a snapshot's JSON, with the page references in
// its messages array replaced by the messages they hold; fetch returns a
// page's content (checked against the reference). A snapshot without
// pages is returned as it is.
func ExpandPages(snap []byte, fetch func(PageRef) ([]byte, error)) ([]byte, error) {
	if !bytes.Contains(snap, pagePrefix) {
		return snap, nil
	}
	d, err := newDoc(snap)
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot: %w", ErrFraming, err)
	}
	m := d.index[`"messages"`]
	if m == nil || len(m.app) > 0 {
		return snap, nil
	}
	var out []byte
	var elems [][]byte
	paged := false
	err = eachElement(m.val, func(e []byte) error {
		if !IsPage(e) {
			elems = append(elems, e)
			return nil
		}
		p, err := ParsePage(e)
		if err != nil {
			return err
		}
		content, err := fetch(p)
		if err != nil {
			return err
		}
		if int64(len(content)) != p.Size {
			return fmt.Errorf("page %s holds %d bytes, its reference says %d", p.SHA256, len(content), p.Size)
		}
		n := 0
		if err := eachElement(append(append([]byte{'['}, content...), ']'), func(pe []byte) error {
			n++
			elems = append(elems, pe)
			return nil
		}); err != nil {
			return fmt.Errorf("page %s: %w", p.SHA256, err)
		}
		if n != p.Messages {
			return fmt.Errorf("page %s holds %d messages, its reference says %d", p.SHA256, n, p.Messages)
		}
		paged = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !paged {
		return snap, nil
	}
	val := make([]byte, 0, len(snap)*2)
	val = append(val, '[')
	val = append(val, bytes.Join(elems, comma)...)
	val = append(val, ']')
	m.val = val
	m.resize()
	out = d.appendTo(make([]byte, 0, d.size()))
	return out, nil
}

// Pages calls fn with every page reference in snap's messages array.
func Pages(snap []byte, fn func(PageRef)) error {
	if !bytes.Contains(snap, pagePrefix) {
		return nil
	}
	d, err := newDoc(snap)
	if err != nil {
		return err
	}
	m := d.index[`"messages"`]
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
