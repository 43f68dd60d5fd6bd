// Package vfs is the one small seam all of the file store's I/O goes
// through, so that tests can inject faults (short writes, ENOSPC, EIO on
// fsync) and simulate power loss.
//
// Names are slash-separated paths relative to the store root; the real
// implementation (OS) resolves them inside an *os.Root, which refuses to
// leave the root through ".." or symlinks, and additionally refuses any
// symlink at all inside the root (ErrSymlink): a session directory holds
// only regular files and directories.
package vfs
