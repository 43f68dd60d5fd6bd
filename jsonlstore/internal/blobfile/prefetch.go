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
