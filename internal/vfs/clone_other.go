//go:build !linux

package vfs

// Clone makes dst a clone of src where the file system clones; here it
// never does (an error), and the caller copies.
func Clone(dst, src File) error { return errUnsupported }
