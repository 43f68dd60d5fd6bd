package blobfile

import (
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// PrefetchRefs is Prefetch for messages decoded without their content:
// it starts reading the blobs their parts reference, on as many
// goroutines as there are cores.
func (c *Cache) PrefetchRefs(ms sessnap.Messages) func() {
	var hashes []string
	seen := map[string]bool{}
	c.mu.Lock()
	ms.Refs(func(ref session.ContentRef) {
		if _, cached := c.m[ref.SHA256]; !cached && !seen[ref.SHA256] {
			seen[ref.SHA256] = true
			hashes = append(hashes, ref.SHA256)
		}
	})
	c.mu.Unlock()
	return c.prefetch(hashes)
}

// PrefetchPages starts reading the pages snap, a stored snapshot,
// references, on as many goroutines as there are cores, so that
// expanding them (record.ExpandPages, one page after another) finds them
// read, decompressed and checked.
func (c *Cache) PrefetchPages(snap []byte) func() {
	var hashes []string
	seen := map[string]bool{}
	c.mu.Lock()
	ScanRefs(snap, func(hash string, page bool) {
		if _, cached := c.m[hash]; page && !cached && !seen[hash] {
			seen[hash] = true
			hashes = append(hashes, hash)
		}
	})
	c.mu.Unlock()
	return c.prefetch(hashes)
}
