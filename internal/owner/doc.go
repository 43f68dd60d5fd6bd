// Package owner keeps a store usable by its owner when root works on it.
//
// Root may open any user's store (to compact, repair or back it up), and
// every file it creates would be root's, mode 0600: the owner could no
// longer read their own sessions. So a file or directory that a process
// running as root creates in a directory owned by another user is given
// to that directory's owner (user and group) at once, through the
// descriptor it was created with, never through a path that could have
// been swapped for a link.
//
//	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
//	…
//	err = owner.Inherit(f, parentInfo)
//
// For any other process, or in a directory root owns, Inherit does
// nothing.
package owner
