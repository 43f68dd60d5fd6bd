package blobfile

import (
	"errors"
	"sync"

	"github.com/sessionstore/sessionstore/internal/vfs"
)

// Deferred are the blob files of a session being created, written
// and not yet synced. A new session is invisible until it is published,
// so its blobs need to be durable only before that, not each as it is
// written: they are synced together, concurrently, so that the file
// system commits them in as few journal transactions as it can. An import
// of a long session writes hundreds of blobs; one sync each, in turn, was
// most of its time.
type Deferred struct {
	on    bool
	files []vfs.File
	dir   vfs.SubFS // blobs/, once made (Writer.putNew)
}

// deferredMax bounds the blob files held open: the next is synced with
// those before it.
const deferredMax = 64

// deferredSyncs is how many of them are synced at once.
const deferredSyncs = 8

// Add holds f until Sync, syncing what is held when it is too much.
func (d *Deferred) Add(f vfs.File) error {
	d.files = append(d.files, f)
	if len(d.files) >= deferredMax {
		return d.Sync()
	}
	return nil
}

// Sync syncs and closes the files held.
func (d *Deferred) Sync() error {
	files := d.files
	d.files = nil
	errs := make([]error, len(files))
	sem := make(chan struct{}, deferredSyncs)
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = f.Sync()
			if err := f.Close(); errs[i] == nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Discard closes the files held, unsynced: the session is abandoned.
func (d *Deferred) Discard() {
	for _, f := range d.files {
		_ = f.Close() // its directory is being removed
	}
	d.files = nil
	if d.dir != nil {
		_ = d.dir.Close() // a directory handle: nothing to flush
		d.dir = nil
	}
}

// Defer makes b hold the blob files it writes, unsynced, until Sync (on),
// or sync each before its record again (off): a session being created is
// invisible until it is published, so its blobs are synced together
// before that (Deferred).
func (b *Writer) Defer(on bool) { b.deferred.on = on }

// Discard closes the blob files b holds, unsynced: the session being
// created is abandoned.
func (b *Writer) Discard() {
	b.closeLinker()
	b.deferred.Discard()
}
