package blobfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// A fork shares its parent's blob files instead of writing them again.
// A blob file is never written once it has its name (a blob is written
// under a temporary name and renamed; a damaged one is replaced by
// another file renamed over it; collection, compaction, repair and
// retirement only remove names), so one file under the names of two
// sessions is two sessions' content that nothing changes: removing one
// session's name leaves the other's file as it was. The fork's blobs/
// gets, for each blob it needs, in this order:
//
//   - a hard link to the parent's file (the same inode: no byte written);
//   - where the file system refuses the link (none, or too many links),
//     a clone of it (a reflink, where the file system clones: a new inode
//     sharing the parent's blocks until either is written);
//   - where neither works, a copy.
//
// Each session directory stays whole on its own: `cp -r` of it copies
// every byte it needs, and a link is a name like any other to every tool
// that reads it.

// ShareFrom makes the writer of a session being created (Defer) take the
// blobs it puts, and those ShareRefs names, from session src's blobs/
// wherever src holds them: linked, cloned or copied, never compressed or
// written again from content.
func (b *Writer) ShareFrom(src session.SessionID) {
	if b != nil {
		b.source = Dir(src)
	}
}

// ShareRefs gives the session being created every blob msgs reference,
// taken from the session ShareFrom named: the content of a fork's parts
// loaded without it. A blob the parent lacks is left for CheckRefs to
// refuse.
func (b *Writer) ShareRefs(msgs sessnap.Messages) error {
	if b == nil || b.source == "" {
		return nil
	}
	var err error
	msgs.Refs(func(ref session.ContentRef) {
		if err != nil || b.known[ref.SHA256] {
			return
		}
		var ok bool
		if ok, err = b.share(ref.SHA256); ok && err == nil {
			// The file is the parent's, which its record references with
			// this size: CheckRefs need not open it again.
			if b.sizes == nil {
				b.sizes = map[string]int64{}
			}
			b.sizes[ref.SHA256] = ref.Size
		}
	})
	return err
}

// Shared counts how the blobs a writer took from another session got
// there (ShareFrom).
type Shared struct {
	Linked, Cloned, Copied int
}

// Shared reports how the writer's blobs taken from another session got
// there.
func (b *Writer) Shared() Shared {
	if b == nil {
		return Shared{}
	}
	return b.shared
}

// share puts the source's blob of hash into the new session's blobs/
// (link, else clone, else copy), reporting false when the source holds no
// blob of hash.
func (b *Writer) share(hash string) (bool, error) {
	if err := b.mkdirDeferred(); err != nil {
		return false, err
	}
	if b.linker == nil {
		l, err := vfs.NewDirLinker(b.fs, b.source, b.dir+"/"+layout.BlobDir)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // the source has no blobs/
		}
		if err != nil {
			return false, layout.OpErr("share blobs", "", err)
		}
		b.linker = l
	}
	for _, name := range []string{Name(hash, false), Name(hash, true)} {
		src, dst := b.source+"/"+name, b.dir+"/"+layout.BlobDir+"/"+name
		err := b.linker.Link(name)
		if err == nil {
			b.shared.Linked++
		} else {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if errors.Is(err, fs.ErrExist) {
				return true, nil // shared already (a raw and a compressed file of one hash)
			}
			var cloned bool
			if cloned, err = b.cloneOrCopy(src, name); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return false, layout.PathErr("share blob", "", dst, err)
			}
			if cloned {
				b.shared.Cloned++
			} else {
				b.shared.Copied++
			}
		}
		b.known[hash] = true
		b.pending = append(b.pending, hash)
		return true, nil
	}
	return false, nil
}

// cloneOrCopy creates name in the new session's blobs/ holding what the
// file src holds: a clone where the file system makes one, else a copy.
// The file is synced with the session's others before it is published
// (Deferred).
func (b *Writer) cloneOrCopy(src, name string) (cloned bool, err error) {
	in, err := b.fs.OpenFile(src, layout.RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer func() { _ = in.Close() }() // read-only
	out, err := b.deferred.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return false, err
	}
	cloned = vfs.Clone(out, in) == nil
	if !cloned {
		_, err = io.Copy(out, in)
	}
	if err == nil {
		return cloned, b.deferred.Add(out)
	}
	_ = out.Close() // the session is abandoned: the error is the copy's
	return false, fmt.Errorf("copy: %w", err)
}

// closeLinker closes the directories sharing opened.
func (b *Writer) closeLinker() {
	if b.linker != nil {
		_ = b.linker.Close() // directories, nothing written through them
		b.linker = nil
	}
}
