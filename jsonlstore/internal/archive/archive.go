package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// Names and bounds of an archive.
const (
	ManifestFile    = "manifest.json"
	ManifestVersion = 1
	MaxManifestSize = 16 << 20
	// DecoderMemory caps what a zstd decoder may allocate for a
	// segment, so a hostile archive cannot exhaust memory.
	DecoderMemory = 64 << 20
	Window        = 8 << 20
)

// Segment is one segment as the manifest lists it.
type Segment struct {
	File     string `json:"file"`
	First    uint64 `json:"first"`
	Last     uint64 `json:"last"`
	Records  int64  `json:"records"`
	Bytes    int64  `json:"bytes"`     // uncompressed
	ZstBytes int64  `json:"zst_bytes"` // compressed, the file's size
	CRC      string `json:"crc32c"`    // of the uncompressed bytes, 8 hex digits
}

// Manifest is archive/manifest.json: the segments of a session.
type Manifest struct {
	Version  int       `json:"v"`
	Segments []Segment `json:"segments"`
}

// Dir is session id's archive directory.
func Dir(id session.SessionID) string { return layout.SessionDir(id) + "/" + layout.ArchiveDir }

// SegmentName is the file name of the segment of revisions first..last.
func SegmentName(first, last uint64) string {
	return fmt.Sprintf("%020d-%020d.zst", first, last)
}

// ReadManifest returns the session's manifest; a missing one is empty.
func ReadManifest(fsys vfs.FS, id session.SessionID) (Manifest, error) {
	var m Manifest
	b, err := vfs.ReadFile(fsys, Dir(id)+"/"+ManifestFile, MaxManifestSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{Version: ManifestVersion}, nil
	}
	if err != nil {
		return m, err
	}
	if !layout.UnframeJSON(b, &m) || m.Version != ManifestVersion {
		return m, errors.New("archive manifest is damaged or from an unknown version")
	}
	for _, seg := range m.Segments {
		if seg.First == 0 || seg.Last < seg.First || seg.File != SegmentName(seg.First, seg.Last) {
			return m, fmt.Errorf("archive manifest lists an invalid segment %+v", seg)
		}
	}
	slices.SortFunc(m.Segments, func(a, b Segment) int { return cmpUint(a.First, b.First) })
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

// Below returns the segments that hold revisions 1..below-1, in
// order, checking that they cover that range exactly. Segments reaching
// into the log (Last >= below) are ignored.
func (m Manifest) Below(below uint64) ([]Segment, error) {
	var segs []Segment
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

// NewSegmentDecoder reads a segment's compressed bytes r with the
// decoder's memory and window capped, so that a hostile archive cannot
// exhaust memory. It decodes on the caller's goroutine (concurrency 1):
// r is read only from within the decoder's Read.
func NewSegmentDecoder(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(DecoderMemory), zstd.WithDecoderMaxWindow(Window))
}

// OpenSegment opens the segment file name and its capped decoder, and
// returns a function that closes both.
func OpenSegment(fsys vfs.FS, name string) (*zstd.Decoder, func(), error) {
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	dec, err := NewSegmentDecoder(f)
	if err != nil {
		_ = f.Close() // read-only
		return nil, nil, err
	}
	return dec, func() { dec.Close(); _ = f.Close() }, nil // read-only
}

// Corruption wraps a problem with an archive as corruption of the
// session, located at the segment — unless it is a failure to open or read
// the file (layout.AccessErr), which says nothing about what it holds.
func Corruption(id session.SessionID, file string, rev uint64, err error) error {
	if layout.AccessErr(err) {
		return layout.PathErr("read", id, Dir(id)+"/"+file, err)
	}
	return &sessionstore.CorruptionError{ID: id, Path: Dir(id) + "/" + file, Revision: rev, Err: err}
}

// WriteManifest replaces the manifest atomically and durably.
func WriteManifest(fsys vfs.FS, id session.SessionID, m Manifest) error {
	m.Version = ManifestVersion
	b, err := record.Frame(m)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fsys, Dir(id), ManifestFile, b, layout.FilePerm, true, "."+layout.RandomSuffix())
}

// ensureDir creates the archive directory (durably) if missing.
func ensureDir(fsys vfs.FS, id session.SessionID) error {
	err := fsys.Mkdir(Dir(id), layout.DirPerm)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsys.SyncDir(layout.SessionDir(id))
}
