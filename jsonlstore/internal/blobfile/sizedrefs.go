package blobfile

import (
	"bytes"
	"strconv"

	"github.com/sessionstore/sessionstore/internal/blob"
)

// ScanSizedRefs calls fn with every reference b holds in the form the
// store writes one — "sha256":"<hash>", then (a page's) "messages":<n>,
// then "size":<n> (sessnap's part "blob" reference; record.EncodePage) —
// with the size it claims and whether it names a page. A hash with no
// size after it (an origin's digest, say) is no reference it can check,
// and is left out: the caller that must be exact decodes the messages.
func ScanSizedRefs(b []byte, fn func(hash string, size int64, page bool)) {
	for {
		i := bytes.Index(b, refPrefix)
		if i < 0 {
			return
		}
		at := i + len(refPrefix)
		h := b[at:]
		if len(h) > 64 && h[64] == '"' && blob.ValidHash(string(h[:64])) {
			page := at >= len(pageRefPrefix) && bytes.Equal(b[at-len(pageRefPrefix):at], pageRefPrefix)
			rest := h[65:]
			if page {
				_, rest, _ = uintMember(rest, `,"messages":`)
			}
			if size, _, ok := uintMember(rest, `,"size":`); ok {
				fn(string(h[:64]), size, page)
			}
		}
		b = h
	}
}

// uintMember reads the member key (with its comma and colon) and the
// unsigned integer after it at the start of b, and returns what follows.
func uintMember(b []byte, key string) (int64, []byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(key))
	if !ok {
		return 0, b, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	v, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	if err != nil {
		return 0, b, false
	}
	return v, rest[n:], true
}
