package archive

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Writer streams record lines into a temporary zstd file of archive/, the
// segment a compaction is writing.
type Writer struct {
	fs   vfs.FS
	f    vfs.File
	tmp  string
	zw   *zstd.Encoder
	cw   *CountingWriter
	hash uint32
	buf  []byte
}

// NewWriter starts a segment of session id (creating archive/ if needed).
func NewWriter(fsys vfs.FS, id session.SessionID) (*Writer, error) {
	if err := ensureDir(fsys, id); err != nil {
		return nil, err
	}
	tmp := Dir(id) + "/.segment-" + layout.RandomSuffix() + layout.TmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FilePerm)
	if err != nil {
		return nil, err
	}
	cw := &CountingWriter{W: f}
	zw, err := zstd.NewWriter(cw, EncoderOptions()...)
	if err != nil {
		_ = f.Close()
		_ = fsys.Remove(tmp)
		return nil, err
	}
	return &Writer{fs: fsys, f: f, tmp: tmp, zw: zw, cw: cw}, nil
}

// EncoderOptions are the zstd settings of a segment.
func EncoderOptions() []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(Window),
		zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true)}
}

// Tmp is the temporary name of the segment being written.
func (sw *Writer) Tmp() string { return sw.tmp }

// Write appends one record's whole line, read again from the log (the
// scan's buffer holds the line without its newline).
func (sw *Writer) Write(r *record.Rec, log io.ReaderAt) error {
	if cap(sw.buf) < int(r.LineLen) {
		sw.buf = make([]byte, r.LineLen)
	}
	b := sw.buf[:r.LineLen]
	if _, err := log.ReadAt(b, r.Offset); err != nil {
		return record.ErrShrunk // the view promised these bytes
	}
	if b[len(b)-1] != '\n' {
		return record.ErrShrunk
	}
	sw.hash = crc32.Update(sw.hash, record.Castagnoli, b)
	_, err := sw.zw.Write(b)
	return err
}

// Finish ends the segment and syncs it, setting seg's CRC and ZstBytes.
func (sw *Writer) Finish(seg *Segment) error {
	if err := sw.zw.Close(); err != nil {
		return err
	}
	seg.CRC = fmt.Sprintf("%08x", sw.hash)
	seg.ZstBytes = sw.cw.N
	err := sw.f.Sync()
	if cerr := sw.f.Close(); err == nil {
		err = cerr
	}
	sw.f = nil
	return err
}

// Abort removes the segment being written.
func (sw *Writer) Abort() {
	if sw.f != nil {
		_ = sw.zw.Close()
		_ = sw.f.Close()
	}
	_ = sw.fs.Remove(sw.tmp)
}

// CountingWriter counts the bytes written through it to W.
type CountingWriter struct {
	W io.Writer
	N int64
}

// Write writes p to W and counts what was written.
func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// VerifySegment decompresses a written segment and checks that it holds
// exactly the bytes written into it: their number and CRC-32C, which the
// segment writer took over the very lines the scan had verified one by one
// (parsing them again would prove nothing more, and cost a quarter of the
// compaction).
func VerifySegment(fsys vfs.FS, name string, seg Segment) error {
	dec, closeSeg, err := OpenSegment(fsys, name)
	if err != nil {
		return err
	}
	defer closeSeg()
	h := crc32.New(record.Castagnoli)
	n, err := io.Copy(h, io.LimitReader(dec, seg.Bytes+1))
	switch {
	case err != nil:
		return err
	case n != seg.Bytes:
		return fmt.Errorf("segment reads back %d bytes, %d were written", n, seg.Bytes)
	case fmt.Sprintf("%08x", h.Sum32()) != seg.CRC:
		return fmt.Errorf("segment reads back with checksum %08x, %s was written", h.Sum32(), seg.CRC)
	}
	return nil
}

// Leftovers are what crashed compactions left in archive/: segment files
// the manifest does not list, listed segments that reach into the log (the
// log is authoritative for their revisions), and temporary files.
type Leftovers struct {
	Names    []string // in archive/
	LogFirst uint64   // the log's first revision
	Overlap  bool     // the manifest lists segments that reach into the log
}

// Paths are the leftovers' paths, relative to the root.
func (l Leftovers) Paths(id session.SessionID) []string {
	var out []string
	for _, n := range l.Names {
		out = append(out, Dir(id)+"/"+n)
	}
	return out
}

// FindLeftovers lists what crashed compactions left in the archive of
// session id, whose log starts at revision logFirst, per its manifest m.
func FindLeftovers(fsys vfs.FS, id session.SessionID, logFirst uint64, m Manifest) (Leftovers, error) {
	l := Leftovers{LogFirst: logFirst}
	entries, err := fsys.ReadDir(Dir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	listed := map[string]bool{}
	for _, seg := range m.Segments {
		if seg.Last < l.LogFirst {
			listed[seg.File] = true
		} else {
			l.Overlap = true
		}
	}
	for _, e := range entries {
		if name := e.Name(); name != ManifestFile && !listed[name] {
			l.Names = append(l.Names, name)
		}
	}
	return l, nil
}

// RemoveLeftovers removes the leftovers, without syncing, and returns the
// paths it removed.
func RemoveLeftovers(fsys vfs.FS, id session.SessionID, l Leftovers) []string {
	var removed []string
	for _, p := range l.Paths(id) {
		if fsys.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// Reclaim removes the leftovers durably, for a compaction that trims
// nothing (one that trims makes its removals durable with its manifest),
// so that a reclaim once reported stays done: the files go (a listed
// segment that reaches into the log may go before the manifest stops
// listing it: readers ignore it anyway), then the manifest stops listing
// such segments, and one sync of archive/ — the manifest's, or its own —
// makes it all durable.
func Reclaim(fsys vfs.FS, id session.SessionID, m Manifest, l Leftovers) ([]string, error) {
	removed := RemoveLeftovers(fsys, id, l)
	if l.Overlap {
		m.Segments = slices.DeleteFunc(m.Segments, func(seg Segment) bool { return seg.Last >= l.LogFirst })
		return removed, WriteManifest(fsys, id, m)
	}
	if len(removed) == 0 {
		return nil, nil
	}
	return removed, fsys.SyncDir(Dir(id))
}

// segmentReader reads a segment's decompressed bytes, never more than the
// manifest promises (an archive bomb stops there), and checks their size
// and checksum against the manifest when they end.
type segmentReader struct {
	r   io.Reader
	seg *Segment
	h   interface {
		io.Writer
		Sum32() uint32
	}
	n int64
}

func (s *segmentReader) Read(p []byte) (int, error) {
	if rest := s.seg.Bytes + 1 - s.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	_, _ = s.h.Write(p[:n]) // a hash never fails
	if s.n > s.seg.Bytes {
		return n, fmt.Errorf("segment %s holds more than the %d bytes the manifest says", s.seg.File, s.seg.Bytes)
	}
	if errors.Is(err, io.EOF) {
		if s.n != s.seg.Bytes {
			return n, fmt.Errorf("segment %s holds %d bytes, manifest says %d", s.seg.File, s.n, s.seg.Bytes)
		}
		if got := fmt.Sprintf("%08x", s.h.Sum32()); got != s.seg.CRC {
			return n, fmt.Errorf("segment %s checksum %s, manifest says %s", s.seg.File, got, s.seg.CRC)
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return n, fmt.Errorf("segment %s ends early: truncated or damaged", s.seg.File)
	}
	return n, err
}

// NewSegmentReader reads the decompressed bytes r of segment seg, never
// more than the manifest promises (an archive bomb stops there), and
// checks their size and checksum against seg when they end.
func NewSegmentReader(r io.Reader, seg *Segment) io.Reader {
	return &segmentReader{r: r, seg: seg, h: crc32.New(record.Castagnoli)}
}
