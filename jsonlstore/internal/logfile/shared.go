package logfile

import (
	"unsafe"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// ResolveShared is sessnap.Messages.Resolve for content read from the
// session's blobs into a cache of the read's own (blobfile.Cache, filled
// only by reads of blob files, each into a buffer of its own that nothing
// writes again): a part's text becomes a string that shares the bytes
// read instead of a copy of them (a copy of every byte of the session's
// content, in a fresh process a page fault for each of its pages). Data
// is copied, as Resolve copies it: the caller may change its bytes.
func ResolveShared(ms sessnap.Messages, fetch func(ref session.ContentRef) ([]byte, error)) error {
	return ms.ResolveWith(fetch, sharedString)
}

// sharedString is b as a string without a copy: b is a blob's content as
// read, which nothing changes afterwards (ResolveShared).
func sharedString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b)) //nolint:gosec // G103: b is never written after the read (ResolveShared)
}
