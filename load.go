package sessionstore

// LoadOptions tune Store.LoadWith. The zero value loads the latest
// revision with all its content, as Load does.
type LoadOptions struct {
	// Revision is the revision to load; 0 is the latest (as Fork's rev).
	Revision uint64
	// WithoutContent leaves the part content a store keeps out of line
	// (large texts and tool outputs, images) unloaded: such a part holds a
	// session.ContentRef in its place. A listing, a summary or a look at a
	// conversation's structure needs no more, and costs no reads of that
	// content. The snapshot restores, and appending it keeps the
	// references as they are (the content stays the session's). A store
	// that keeps no content out of line has nothing to leave out.
	WithoutContent bool
}
