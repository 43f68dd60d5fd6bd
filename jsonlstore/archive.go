package jsonlstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Archives hold revisions trimmed from the log by compaction:
//
//	<session>/archive/
//	  manifest.json                              the segments, framed with a checksum
//	  00000000000000000001-00000000000000000900.zst
//
// A segment is the zstd compression of the trimmed records' lines, copied
// byte for byte from the log (so each keeps its own CRC). The manifest
// gives each segment's revision range, record count, sizes and the CRC-32C
// of its uncompressed bytes; it is replaced atomically and durably after
// the segment is written, synced and verified, and before the log is
// replaced.
//
// The log is authoritative for every revision from its first record on. A
// segment that reaches into the log's range was left by a crash between
// the two steps: readers ignore it and the next compaction reclaims it.

const (
	manifestFile    = "manifest.json"
	manifestVersion = 1
	maxManifestSize = 16 << 20
	// archiveDecoderMemory caps what a zstd decoder may allocate for a
	// segment, so a hostile archive cannot exhaust memory.
	archiveDecoderMemory = 64 << 20
	archiveWindow        = 8 << 20
)

type archiveSegment struct {
	File     string `json:"file"`
	First    uint64 `json:"first"`
	Last     uint64 `json:"last"`
	Records  int64  `json:"records"`
	Bytes    int64  `json:"bytes"`     // uncompressed
	ZstBytes int64  `json:"zst_bytes"` // compressed, the file's size
	CRC      string `json:"crc32c"`    // of the uncompressed bytes, 8 hex digits
}

type manifest struct {
	Version  int              `json:"v"`
	Segments []archiveSegment `json:"segments"`
}

func archiveDir(id session.SessionID) string { return layout.SessionDir(id) + "/" + ArchiveDir }

func segmentName(first, last uint64) string {
	return fmt.Sprintf("%020d-%020d.zst", first, last)
}

// readManifest returns the session's manifest; a missing one is empty.
func readManifest(fsys vfs.FS, id session.SessionID) (manifest, error) {
	var m manifest
	b, err := vfs.ReadFile(fsys, archiveDir(id)+"/"+manifestFile, maxManifestSize)
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{Version: manifestVersion}, nil
	}
	if err != nil {
		return m, err
	}
	if !layout.UnframeJSON(b, &m) || m.Version != manifestVersion {
		return m, errors.New("archive manifest is damaged or from an unknown version")
	}
	for _, seg := range m.Segments {
		if seg.First == 0 || seg.Last < seg.First || seg.File != segmentName(seg.First, seg.Last) {
			return m, fmt.Errorf("archive manifest lists an invalid segment %+v", seg)
		}
	}
	slices.SortFunc(m.Segments, func(a, b archiveSegment) int { return cmpUint(a.First, b.First) })
	return m, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// archivedBelow returns the segments that hold revisions 1..below-1, in
// order, checking that they cover that range exactly. Segments reaching
// into the log (Last >= below) are ignored.
func (m manifest) archivedBelow(below uint64) ([]archiveSegment, error) {
	var segs []archiveSegment
	next := uint64(1)
	for _, seg := range m.Segments {
		if seg.Last >= below {
			continue
		}
		if seg.First != next {
			return nil, fmt.Errorf("archives hold revisions %d-%d where %d was expected", seg.First, seg.Last, next)
		}
		segs = append(segs, seg)
		next = seg.Last + 1
	}
	if next != below {
		return nil, fmt.Errorf("archives end at revision %d but the log starts at %d "+
			"(repair corrects this when an older release listed a segment holding a gap as ending too early)", next-1, below)
	}
	return segs, nil
}

// newSegmentDecoder reads a segment with the decoder's memory and window
// capped, so that a hostile archive cannot exhaust memory.
func newSegmentDecoder(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(archiveDecoderMemory), zstd.WithDecoderMaxWindow(archiveWindow))
}

// openSegment opens the segment file name and its capped decoder, and
// returns a function that closes both.
func (s *Store) openSegment(name string) (*zstd.Decoder, func(), error) {
	f, err := s.fs.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	dec, err := newSegmentDecoder(f)
	if err != nil {
		_ = f.Close() // read-only
		return nil, nil, err
	}
	return dec, func() { dec.Close(); _ = f.Close() }, nil // read-only
}

// archiveCorruption wraps a problem with an archive as corruption of the
// session, located at the segment — unless it is a failure to open or read
// the file (accessErr), which says nothing about what it holds.
func archiveCorruption(id session.SessionID, file string, rev uint64, err error) error {
	if accessErr(err) {
		return layout.PathErr("read", id, archiveDir(id)+"/"+file, err)
	}
	return &sessionstore.CorruptionError{ID: id, Path: archiveDir(id) + "/" + file, Revision: rev, Err: err}
}

// writeManifest replaces the manifest atomically and durably.
func (s *Store) writeManifest(id session.SessionID, m manifest) error {
	m.Version = manifestVersion
	b, err := record.Frame(m)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, archiveDir(id), manifestFile, b, layout.FilePerm, true, "."+layout.RandomSuffix())
}

// ensureArchiveDir creates the archive directory (durably) if missing.
func (s *Store) ensureArchiveDir(id session.SessionID) error {
	err := s.fs.Mkdir(archiveDir(id), layout.DirPerm)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.fs.SyncDir(layout.SessionDir(id))
}

var _ = os.O_RDONLY
