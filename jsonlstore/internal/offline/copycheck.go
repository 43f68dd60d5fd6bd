package offline

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// A full backup checks each staged copy before it publishes it, in one
// pass over what landed in the destination, lighter than a Verify (which
// rebuilds every revision and decodes every snapshot):
//
//   - the history: every record of the archive segments and the log read
//     forwards (logfile.Scan: each line's checksum, the revisions' chain
//     across segments into the log, each segment's size and checksum
//     against the manifest, itself framed with its checksum), the log
//     ending exactly at the last record copied, at its revision;
//   - the blobs and pages the records reference (blobfile.ScanSizedRefs,
//     and the pages' messages in turn): each file there, holding the size
//     the reference claims and content of its SHA-256, each hash once
//     (blobfile.Check, streaming: what it holds follows the file, not the
//     claim);
//   - every other file written (blobs no record references, settings.json,
//     a log whose records a newer version wrote): its bytes against the
//     CRC-32C of the bytes written, taken as they were copied.
//
// A reference that does not check sends the copy to the whole
// VerifySession, which decides: the scan takes what looks like a
// reference for one, and Verify reads the messages. A copy that does not
// check and differs from what was read is never published (batch.flush).

// checkStaged checks st's staged copy in s (the destination), and reports
// what it found as Verify reports a session: problems, the records and
// revision. Its error is for what kept it from checking.
//
// A copy with problems whose every file holds the bytes read from the
// source is faithful: the damage is the source's, and the copy is
// published as it is, with its problems reported, so that a backup keeps
// all a damaged session still holds. Only a copy that differs from what
// was read is refused.
func (s *Store) checkStaged(ctx context.Context, st *staged) (sessionstore.SessionVerifyReport, error) {
	view, closeView, err := s.stagedView(st)
	if err != nil {
		return sessionstore.SessionVerifyReport{ID: st.id}, err
	}
	defer closeView()
	sr, err := view.checkStagedCopy(ctx, st)
	if err == nil && !sr.OK() {
		st.faithful = view.checkWritten(st.id, st, func(string) bool { return false }) == nil
	}
	return sr, err
}

// checkStagedCopy is checkStaged's check, on s, a staged view.
func (s *Store) checkStagedCopy(ctx context.Context, st *staged) (sessionstore.SessionVerifyReport, error) {
	sr := sessionstore.SessionVerifyReport{ID: st.id}
	refsOK, err := s.checkCopy(ctx, st, &sr)
	var ce *sessionstore.CorruptionError
	switch {
	case errors.As(err, &ce):
		sr.Problems = append(sr.Problems, sessionstore.FindingOf(ce))
		return sr, nil
	case err != nil:
		return sr, err
	case !refsOK:
		return s.VerifySession(ctx, st.id, false)
	}
	return sr, nil
}

// checkCopy is checkStaged's pass over s, a staged view. refsOK is false
// when a reference did not check (VerifySession then decides).
func (s *Store) checkCopy(ctx context.Context, st *staged, sr *sessionstore.SessionVerifyReport) (refsOK bool, err error) {
	id := st.id
	v, err := logfile.Open(s.root.FS, id, s.root.MaxRecordBytes)
	if err != nil {
		return false, layout.OpErr("backup", id, err)
	}
	defer func() { _ = v.Close() }() // read-only
	refs := copyRefs{claims: map[string]int64{}}
	h := logfile.NewScan(s.root.FS, id, v)
	defer h.Close()
	var last record.Meta
	var end int64
	for h.Next() {
		if sr.Records%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		r := h.Record()
		blobfile.ScanSizedRefs(r.Payload, refs.add)
		sr.Records++
		last = r.Meta
		if !h.Archived() {
			end = r.End()
		}
	}
	sr.Revision = last.Through()
	all := false // every file written compared with what was written
	var ne *sessionstore.NewerRecordError
	switch err := h.Err(); {
	case errors.As(err, &ne):
		// What a newer version wrote is not read: the log's bytes are
		// compared with those written instead.
		sr.Newer = verify.NewerFinding(ne)
		all = true
	case err != nil:
		return false, err
	case end != st.logBytes || last.Rev != st.rev || v.Size != st.logBytes:
		return false, &sessionstore.CorruptionError{ID: id, Path: v.Name, Offset: end, Revision: last.Rev + 1, Err: fmt.Errorf(
			"the copy's log holds %d bytes whose last record is revision %d; %d bytes to revision %d were copied", v.Size, last.Rev, st.logBytes, st.rev)}
	}
	refsOK, err = refs.check(s, id)
	if err != nil {
		return false, err
	}
	return refsOK, s.checkWritten(id, st, func(name string) bool {
		if all {
			return false
		}
		hash, blob := strings.CutPrefix(name, layout.BlobDir+"/")
		return name == layout.LogFile || strings.HasPrefix(name, layout.ArchiveDir+"/") ||
			blob && refs.checked[strings.TrimSuffix(hash, blobfile.ZstSuffix)]
	})
}

// copyRefs is the references a staged copy's records hold: the size each
// hash is first claimed with, and the pages not yet read.
type copyRefs struct {
	claims  map[string]int64
	pages   []string
	differ  bool            // a hash claimed with two sizes
	checked map[string]bool // blob file names checked by content
}

func (c *copyRefs) add(hash string, size int64, page bool) {
	claim, ok := c.claims[hash]
	switch {
	case !ok:
		c.claims[hash] = size
		if page {
			c.pages = append(c.pages, hash)
		}
	case claim != size:
		c.differ = true
	}
}

// check reads each page (checked against its claim) for the references
// it holds, then checks every blob referenced. It reports false at the
// first reference that does not check; its error is for what kept it
// from reading (a CorruptionError is a reference that does not check).
func (c *copyRefs) check(s *Store, id session.SessionID) (bool, error) {
	fsys := s.root.FS
	for len(c.pages) > 0 {
		hash := c.pages[len(c.pages)-1]
		c.pages = c.pages[:len(c.pages)-1]
		content, err := blobfile.Read(fsys, id, session.ContentRef{SHA256: hash, Size: c.claims[hash]})
		if err != nil {
			return false, refErr(err)
		}
		blobfile.ScanSizedRefs(content, c.add)
	}
	if c.differ {
		return false, nil
	}
	c.checked = make(map[string]bool, len(c.claims))
	for hash, size := range c.claims {
		if err := blobfile.Check(fsys, id, session.ContentRef{SHA256: hash, Size: size}); err != nil {
			return false, refErr(err)
		}
		c.checked[hash] = true
	}
	return true, nil
}

// refErr is nil for a reference that does not check (Verify decides),
// and err for anything else.
func refErr(err error) error {
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) {
		return nil
	}
	return err
}

// checkWritten compares the files of st that the pass did not check by
// content (all but those done says were) with the CRC-32C of the bytes
// written into them.
func (s *Store) checkWritten(id session.SessionID, st *staged, done func(name string) bool) error {
	for name, want := range st.sums {
		if done(name) {
			continue
		}
		path := layout.SessionDir(id) + "/" + name
		f, err := s.root.FS.OpenFile(path, layout.RDONLY, 0)
		if err != nil {
			return layout.OpErr("backup", id, err)
		}
		h := crc32.New(record.Castagnoli)
		n, err := copyThrough(h, f)
		_ = f.Close() // read-only
		if err != nil {
			return layout.OpErr("backup", id, err)
		}
		if n != want.n || h.Sum32() != want.crc {
			return &sessionstore.CorruptionError{ID: id, Path: path, Err: fmt.Errorf(
				"the copy holds %d bytes of checksum %08x; %d bytes of checksum %08x were written", n, h.Sum32(), want.n, want.crc)}
		}
	}
	return nil
}
