// Package lease is the seam between a directory store (package jsonlstore)
// and its sessions' leases: the Leaser the store takes leases with, the
// Handle it keeps of a held one, the real leaser (FS, package fslease on
// the session directories) and the read-only one of a retired session's
// view (View), the store's lock retries (TryLockFile), and how a lease's
// state reads for readers (Status, Previous).
//
// It owns no file and no rule of the lease itself: lease.lock and
// lease.json are package fslease's. It must never decide what a holder
// may do; the store and fslease decide that.
package lease
