package offline

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/session"
)

// A full backup checks each staged copy as it writes it, on the bytes it
// copies, lighter than a Verify (which rebuilds every revision and
// decodes every snapshot) and without reopening what it wrote:
//
//   - every file: created for reading and writing, its bytes summed
//     (CRC-32C) as they are written, then read back once through the
//     same descriptor and compared (copier): a copy whose bytes differ
//     from those written is damaged, and refused;
//   - the history: the archive segments and the log read forwards
//     through their copiers as they are copied (logfile.NewSourceScan:
//     each line's checksum, the revisions' chain across segments into
//     the log, each segment's size and checksum against the manifest),
//     with the record cap a reader of the copy uses (its settings.json,
//     copied first), the log ending exactly at the last record copied, at
//     its revision. The read-back makes these the copy's bytes;
//   - the blobs and pages the records reference (blobfile.ScanSizedRefs,
//     and the pages' messages in turn), in the staged copy: each file
//     there, holding the size the reference claims and content of its
//     SHA-256, each hash once (blobfile.Check, streaming: what it holds
//     follows the file, not the claim).
//
// A reference that does not check sends the copy to the whole
// VerifySession, which decides: the scan takes what looks like a
// reference for one, and Verify reads the messages. A copy that does not
// check and differs from what was read is never published (batch.flush).
//
// A copy with problems whose every file holds the bytes read from the
// source is faithful: the damage is the source's, and the copy is
// published as it is, with its problems reported, so that a backup keeps
// all a damaged session still holds. Only a copy that differs from what
// was read is refused.

// stagedCopy is the files of a staged copy being written, and what
// reading them back found.
type stagedCopy struct {
	st     *staged
	verify bool      // VerifyStaged: read each file back
	open   []*copier // files not yet closed
	dirs   []vfs.NewDir
	// damaged is the first file whose bytes differ from those written.
	damaged *sessionstore.CorruptionError
}

// copier copies one file of a staged copy: what is read through it
// (Read) is read from src, written into f and summed as written, so that
// what reads through it (a check of the records) reads exactly the bytes
// written. It writes with Write alone, and reads src with Read.
type copier struct {
	f    vfs.File
	rel  string // its name within the staged directory
	src  io.Reader
	h    hash.Hash32
	n    int64
	tap  func(p []byte) // sees each piece written (nil: none)
	werr error          // the first error writing f
	rerr error          // the first error reading src
}

func (c *copier) Read(p []byte) (int, error) {
	if c.werr != nil {
		return 0, c.werr
	}
	n, err := c.src.Read(p)
	if n > 0 {
		if _, werr := c.f.Write(p[:n]); werr != nil {
			c.werr = werr
			return 0, werr
		}
		_, _ = c.h.Write(p[:n]) // a hash never fails
		c.n += int64(n)
		if c.tap != nil {
			c.tap(p[:n])
		}
	}
	if err != nil && !errors.Is(err, io.EOF) && c.rerr == nil {
		c.rerr = err
	}
	return n, err
}

// mkdir makes directory sub of the staged copy, closed by close.
func (c *stagedCopy) mkdir(top vfs.NewDir, sub string) (vfs.NewDir, error) {
	d, err := top.Mkdir(sub, layout.DirPerm)
	if err != nil {
		return nil, err
	}
	c.st.names = append(c.st.names, c.st.tmp+"/"+sub)
	c.dirs = append(c.dirs, d)
	return d, nil
}

// create makes file name in d (directory sub of the staged copy, "" for
// its top) and returns its copier from src; tap, when not nil, sees each
// piece written.
func (c *stagedCopy) create(d vfs.NewDir, sub, name string, src io.Reader, tap func([]byte)) (*copier, error) {
	rel := name
	if sub != "" {
		rel = sub + "/" + name
	}
	c.st.names = append(c.st.names, c.st.tmp+"/"+rel)
	f, err := d.Create(name, layout.FilePerm)
	if err != nil {
		return nil, err
	}
	cp := &copier{f: f, rel: rel, src: src, h: crc32.New(record.Castagnoli), tap: tap}
	c.open = append(c.open, cp)
	return cp, nil
}

// copyFile copies src into file name of d (create, then finish) and
// returns the bytes written.
func (c *stagedCopy) copyFile(d vfs.NewDir, sub, name string, src io.Reader, tap func([]byte)) (int64, error) {
	return c.copyChecked(d, sub, name, src, tap, nil)
}

// copyChecked is copyFile with check run on the file written once it
// read back whole (finish).
func (c *stagedCopy) copyChecked(d vfs.NewDir, sub, name string, src io.Reader, tap func([]byte), check func(f vfs.File, size int64)) (int64, error) {
	cp, err := c.create(d, sub, name, src, tap)
	if err != nil {
		return 0, err
	}
	return c.finish(cp, check)
}

// finish copies what is left of cp's source, reads the file back when
// verifying (a file whose bytes differ is recorded as damaged, and the
// copy found not to check), runs check (when not nil) on a file that
// read back whole, closes it, and returns the bytes written. Its error
// is for what kept it from copying or reading back.
func (c *stagedCopy) finish(cp *copier, check func(f vfs.File, size int64)) (int64, error) {
	_, err := copyThrough(io.Discard, cp)
	switch {
	case cp.werr != nil:
		err = cp.werr
	case cp.rerr != nil:
		err = cp.rerr
	}
	if err == nil && c.verify && c.damaged == nil {
		err = c.readBack(cp)
		if err == nil && c.damaged == nil && check != nil {
			check(cp.f, cp.n)
		}
	}
	c.open = slices.DeleteFunc(c.open, func(o *copier) bool { return o == cp })
	if cerr := cp.f.Close(); err == nil {
		err = cerr
	}
	return cp.n, err
}

// readBack reads cp's file back through its descriptor and compares its
// bytes with those written.
func (c *stagedCopy) readBack(cp *copier) error {
	h := crc32.New(record.Castagnoli)
	n, err := copyThrough(h, io.NewSectionReader(cp.f, 0, math.MaxInt64))
	if err != nil {
		return err
	}
	if n == cp.n && h.Sum32() == cp.h.Sum32() {
		return nil
	}
	st := c.st
	c.damaged = &sessionstore.CorruptionError{ID: st.id, Path: layout.SessionDir(st.id) + "/" + cp.rel, Err: fmt.Errorf(
		"the copy holds %d bytes of checksum %08x; %d bytes of checksum %08x were written", n, h.Sum32(), cp.n, cp.h.Sum32())}
	st.sr.Problems = []sessionstore.Finding{sessionstore.FindingOf(c.damaged)}
	st.faithful = false
	return nil
}

// close closes what is still open (after an error, or a damaged file).
func (c *stagedCopy) close() error {
	for _, cp := range c.open {
		_ = cp.f.Close() // the copy is refused or removed
	}
	c.open = nil
	var err error
	for _, d := range c.dirs {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	c.dirs = nil
	return err
}

// history is what the check of a copy's history read (checkHistory).
type history struct {
	refs    copyRefs
	records int
	last    record.Meta
	end     int64 // the log's last record's end
	err     error // what stopped the scan (nil at the log's end)
}

// checkHistory reads session id's history through the copiers of its
// segments (segs, described by metas) and of its log (logSize bytes), with records of at
// most maxPayload bytes, collecting the references the records hold.
func checkHistory(ctx context.Context, id session.SessionID, maxPayload int, metas []archive.Segment, segs []*copier, log *copier, logSize int64) *history {
	h := &history{refs: copyRefs{claims: map[string]int64{}}}
	sc := logfile.NewSourceScan(id, maxPayload, metas, func(i int) io.Reader { return segs[i] },
		record.Source{R: log, Size: logSize, Path: layout.LogPath(id), Tail: true})
	defer sc.Close()
	for sc.Next() {
		if h.records%1024 == 0 {
			if err := ctx.Err(); err != nil {
				h.err = err
				return h
			}
		}
		r := sc.Record()
		blobfile.ScanSizedRefs(r.Payload, h.refs.add)
		h.records++
		h.last = r.Meta
		if !sc.Archived() {
			h.end = r.End()
		}
	}
	h.err = sc.Err()
	return h
}

// report adds to st's report what the history's check found (its
// records, revision, and a problem), once the files are written and read
// back: logBytes is the log's bytes copied. Its error is for what kept
// the history from being read.
func (h *history) report(st *staged, logBytes int64) error {
	sr := &st.sr
	sr.Records, sr.Revision = h.records, h.last.Through()
	st.faithful = true // every file read back holds what was read
	var ne *sessionstore.NewerRecordError
	var ce *sessionstore.CorruptionError
	switch err := h.err; {
	case errors.As(err, &ne):
		// What a newer version wrote is not read: the read-back compared
		// the log's bytes with those read.
		sr.Newer = verify.NewerFinding(ne)
	case errors.As(err, &ce):
		sr.Problems = append(sr.Problems, sessionstore.FindingOf(ce))
		h.refs = copyRefs{} // Verify reads the references of a copy that checks
	case err != nil && !errors.Is(err, record.ErrShrunk):
		return err
	case h.end != st.logBytes || h.last.Rev != st.rev || logBytes != st.logBytes:
		sr.Problems = append(sr.Problems, sessionstore.FindingOf(&sessionstore.CorruptionError{
			ID: st.id, Path: layout.LogPath(st.id), Offset: h.end, Revision: h.last.Rev + 1, Err: fmt.Errorf(
				"the copy's log holds %d bytes whose last record is revision %d; %d bytes to revision %d were copied", logBytes, h.last.Rev, st.logBytes, st.rev)}))
		h.refs = copyRefs{}
	}
	return nil
}

// checkRefs ends the check of st, a staged copy of s (the destination)
// that read back whole, by its references (refs, checked as the blobs
// were copied: copyBlobsChecked): when one did not check, the whole
// VerifySession of the copy decides (st's report is then its). Its
// error is for what kept it from checking.
func (s *Store) checkRefs(ctx context.Context, st *staged, refs *copyRefs) error {
	if refs.err != nil || !refs.failed && !refs.differ {
		return refs.err
	}
	view, closeView, err := s.stagedView(st)
	if err != nil {
		return err
	}
	defer closeView()
	st.sr, err = view.VerifySession(ctx, st.id, false)
	return err
}

// copyRefs is the references a staged copy's records hold: the size each
// hash is first claimed with, and the pages not yet read; and whether
// one did not check (Verify then decides), or what kept one from being
// checked.
type copyRefs struct {
	claims map[string]int64
	pages  []string
	differ bool // a hash claimed with two sizes
	failed bool // a reference did not check
	err    error
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

// fail takes err, a reference's check: one that does not check (a
// CorruptionError) or what kept it from being checked.
func (c *copyRefs) fail(err error) {
	if rerr := refErr(err); rerr != nil && c.err == nil {
		c.err = rerr
	}
	c.failed = true
}

// page reads page hash's content from f, its file name of size bytes
// (the copy, read back), checked against its claim, for the references
// it holds.
func (c *copyRefs) page(id session.SessionID, hash, name string, f vfs.File, size int64) {
	content, err := blobfile.ReadOpenFile(id, name, f, size, session.ContentRef{SHA256: hash, Size: c.claims[hash]})
	if err != nil {
		c.fail(err)
		return
	}
	blobfile.ScanSizedRefs(content, c.add)
}

// blob checks blob hash's file f, name, of size bytes (the copy, read
// back), against its claim.
func (c *copyRefs) blob(id session.SessionID, hash, name string, f vfs.File, size int64) {
	if err := blobfile.CheckFile(id, name, f, size, session.ContentRef{SHA256: hash, Size: c.claims[hash]}); err != nil {
		c.fail(err)
	}
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
