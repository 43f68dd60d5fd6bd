package blobgc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Blob collection: a blob that no record references — left by an append
// that failed or crashed after writing it, or by a full record refused
// after its pages were stored — is removed by compaction (when it trims)
// and by repair, under the session's lease, never by a reader. What
// counts as a reference is generous, so that nothing referenced can go:
// every "sha256":"<64 hex>" in any record of the log or the archives, in
// any forensic copy (the revisions a repair set aside keep their
// content), and in any page those reference. A blob named by a string
// that merely looks like a reference is kept too; that costs its bytes,
// never a revision. A page that only forensic copies reference may be
// the damage a salvage set aside: when one cannot be read, the blobs it
// references are unknown, and the collection removes none.

// Collector collects the blobs of one store's sessions: its root, and
// the gate every read of a session passes first.
type Collector struct {
	root *layout.Root
	gate logfile.Gate
}

// New returns the blob collection of the store at root, whose reads pass
// gate.
func New(root *layout.Root, gate logfile.Gate) *Collector {
	return &Collector{root: root, gate: gate}
}

// Collect removes session id's unreferenced blobs and temporary blob
// files; the caller holds the lease, and forget corrects its writer's
// memory of the blobs present (blobfile.Writer.Forget). It removes
// nothing when it cannot read every reference: a damaged log or archive
// (the error says why), or a page only forensic copies reference that
// cannot be read (Kept says which).
func (bc *Collector) Collect(ctx context.Context, id session.SessionID, forget func(hash string)) (maintenance.BlobCollection, error) {
	var c maintenance.BlobCollection
	entries, err := bc.root.FS.ReadDir(blobfile.Dir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, layout.OpErr("collect blobs of", id, err)
	}
	present := map[string]string{} // hash -> file name
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
		case blobfile.IsTemp(name):
			if bc.root.FS.Remove(blobfile.Dir(id)+"/"+name) == nil {
				c.Temporary++
			}
		case blob.ValidHash(strings.TrimSuffix(name, blobfile.ZstSuffix)):
			present[strings.TrimSuffix(name, blobfile.ZstSuffix)] = name
		}
	}
	if len(present) == 0 {
		return c, nil
	}
	refs, unread, err := bc.blobRefs(ctx, id)
	if err != nil {
		return c, layout.OpErr("collect blobs of", id, err)
	}
	if unread != "" {
		// Any blob may be one the unread page references: keep them all.
		c.Kept = unread
		bc.root.Logger.Warn("jsonlstore: blob collection removed no blob", "session", id, "why", unread)
		return c, nil
	}
	for hash, name := range present {
		if refs[hash] {
			continue
		}
		p := blobfile.Dir(id) + "/" + name
		fi, err := bc.root.FS.Lstat(p)
		if err != nil {
			continue
		}
		if err := bc.root.FS.Remove(p); err != nil {
			return c, layout.OpErr("collect blobs of", id, err)
		}
		forget(hash)
		c.Blobs++
		c.Bytes += fi.Size()
	}
	// The removals are not synced: one that a crash undoes leaves an
	// unreferenced blob, which the next collection removes again.
	return c, nil
}

// blobRefs returns every hash session id's records, forensic copies and
// their pages reference. A page that only forensic copies reference may
// be damaged (a salvage sets aside the records whose page is damaged, and
// their copies keep referencing it): unread says why one could not be
// read (then the references it holds are unknown, and nothing may be
// removed), and the scan goes on. A page the records reference must be
// read: an error reading one is returned.
func (bc *Collector) blobRefs(ctx context.Context, id session.SessionID) (refs map[string]bool, unread string, err error) {
	refs = map[string]bool{}
	var pages []string
	add := func(hash string, page bool) {
		if !refs[hash] && page {
			pages = append(pages, hash)
		}
		refs[hash] = true
	}
	// expand scans the pages queued, and those they reference in turn.
	expand := func(forensic bool) error {
		for len(pages) > 0 {
			hash := pages[len(pages)-1]
			pages = pages[:len(pages)-1]
			content, name, err := blobfile.ReadFile(bc.root.FS, id, hash, blobfile.SizeAny)
			if err == nil {
				err = blob.CheckHash(hash, content) // a page cut short or overwritten
			}
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // a missing page: verify reports it
			case err != nil && forensic:
				if unread == "" {
					unread = fmt.Sprintf("page %s/%s, which only forensic copies reference, cannot be read (%v): the blobs it references are unknown", blobfile.Dir(id), name, err)
				}
				continue
			case err != nil:
				return fmt.Errorf("page %s: %w", hash, err)
			}
			blobfile.ScanRefs(content, add)
		}
		return nil
	}
	err = bc.gate.Read(ctx, bc.root, id, func(v *logfile.View) error {
		clear(refs)
		pages = pages[:0]
		h := logfile.NewScan(bc.root.FS, id, v)
		defer h.Close()
		for h.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			blobfile.ScanRefs(h.Record().Payload, add)
		}
		return h.Err()
	})
	if err == nil {
		err = expand(false)
	}
	if err != nil {
		return nil, "", err
	}
	// The pages queued from here on are referenced by forensic copies
	// alone.
	if err := bc.forensicRefs(id, add); err != nil {
		return nil, "", err
	}
	if err := expand(true); err != nil {
		return nil, "", err
	}
	return refs, unread, nil
}

// forensicRefs scans session id's forensic copies for references,
// streaming (they may be large).
func (bc *Collector) forensicRefs(id session.SessionID, fn func(hash string, page bool)) error {
	dir := layout.SessionDir(id) + "/" + layout.ForensicDir
	entries, err := bc.root.FS.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Each window holds the last bytes of the one before, more than a
	// page reference with its prefix: a reference that straddles two
	// windows is whole in the second (one found twice is added twice).
	const chunk, overlap = 1 << 20, 128
	buf := make([]byte, overlap+chunk)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := bc.root.FS.OpenFile(dir+"/"+e.Name(), layout.RDONLY, 0)
		if err != nil {
			return err
		}
		carry := 0
		for {
			n, rerr := io.ReadFull(f, buf[carry:])
			blobfile.ScanRefs(buf[:carry+n], fn)
			if rerr != nil {
				_ = f.Close() // read-only
				if rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
					return rerr
				}
				break
			}
			carry = copy(buf, buf[carry+n-overlap:carry+n])
		}
	}
	return nil
}
