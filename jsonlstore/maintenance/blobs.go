package maintenance

// BlobCollection is what a blob collection removed.
type BlobCollection struct {
	// Blobs and Bytes count the unreferenced blobs removed and their
	// bytes on disk; Temporary the temporary blob files removed.
	Blobs     int   `json:"blobs,omitempty"`
	Bytes     int64 `json:"bytes,omitempty"`
	Temporary int   `json:"temporary,omitempty"`
	// Kept says why no blob was removed although some may be
	// unreferenced ("" when the collection ran): a page that only
	// forensic copies reference cannot be read, so the references it
	// holds are unknown.
	Kept string `json:"kept,omitempty"`
}
