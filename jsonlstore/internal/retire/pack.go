package retire

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// A pack is one retired session: a zstd stream of a tar archive.
//
//	.retired/<id>.tar.zst = zstd( tar(
//	    retired.json                 the Header: the session's summary and every entry, with sizes and SHA-256
//	    lease.lock                   the entries, in the Header's order: lease.lock first (so that
//	    archive/  archive/…          a restore holds it from the start), then depth first, by name
//	    blobs/  blobs/…
//	    log.jsonl  summary.json …
//	) )
//
// Every member's bytes are the session file's, byte for byte; a reader
// checks each against the Header's size and SHA-256, and the Header
// against the members, before it trusts any of it.

const (
	// HeaderName is the first member of a pack.
	HeaderName = "retired.json"
	// HeaderVersion is the version of the Header this package writes and
	// reads.
	HeaderVersion = 1
	// maxHeaderBytes bounds the Header member (a million entries fit).
	maxHeaderBytes = 256 << 20
	// maxEntries bounds the entries of one pack.
	maxEntries = 1 << 20
	// window and decoderMemory are the zstd window a pack is written with
	// and the memory a reader allows a pack's decoder: archive segments'.
	window        = archive.Window
	decoderMemory = archive.DecoderMemory
	// leaseLock is the session's lease lock (fslease.LockFile).
	leaseLock = "lease.lock"
)

// Header is a pack's first member, retired.json: what listings show of
// a retired session and what every other member must be.
type Header struct {
	V         int               `json:"v"`
	ID        session.SessionID `json:"id"`
	RetiredAt time.Time         `json:"retired_at"`
	// Summary is the session's summary when it was retired (its lease
	// field empty).
	Summary summary.Summary `json:"summary"`
	// Bytes is the sum of the files' sizes.
	Bytes int64 `json:"bytes"`
	// Entries are the session directory's files and directories, in the
	// order of the members that follow.
	Entries []Entry `json:"entries"`
}

// Entry is one file or directory of a retired session.
type Entry struct {
	// Name is the path below the session directory, slash-separated.
	Name string `json:"name"`
	// Dir marks a directory (no size, no hash).
	Dir bool `json:"dir,omitempty"`
	// Mode is the permission bits.
	Mode fs.FileMode `json:"mode"`
	// Size and SHA256 (lower-case hex) are a file's.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Scan lists the files and directories below dir (a session directory)
// with their sizes and hashes, in pack order. Anything but a regular file
// or a directory refuses the session (ErrUnpackable).
func Scan(fsys vfs.FS, dir string) ([]Entry, int64, error) {
	var out []Entry
	var total int64
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := fsys.ReadDir(path.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			name := path.Join(rel, e.Name())
			fi, err := fsys.Lstat(path.Join(dir, name))
			if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				out = append(out, Entry{Name: name, Dir: true, Mode: fi.Mode().Perm()})
				if err := walk(name); err != nil {
					return err
				}
			case fi.Mode().IsRegular():
				sum, n, err := hashFile(fsys, path.Join(dir, name))
				if err != nil {
					return err
				}
				if n != fi.Size() {
					return fmt.Errorf("%w: %s changed while it was read", ErrChanged, name)
				}
				out = append(out, Entry{Name: name, Mode: fi.Mode().Perm(), Size: n, SHA256: sum})
				total += n
			default:
				return fmt.Errorf("%w: %s is %v, not a regular file or directory", ErrUnpackable, name, fi.Mode().Type())
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, 0, err
	}
	// lease.lock first: a restore locks it before it writes the rest.
	for i, e := range out {
		if e.Name == leaseLock && !e.Dir {
			copy(out[1:i+1], out[:i])
			out[0] = e
			break
		}
	}
	return out, total, nil
}

func hashFile(fsys vfs.FS, name string) (string, int64, error) {
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// writePack writes the pack of session directory dir, whose Header is h,
// to w: every file is read again and must hash as h says (ErrChanged).
func writePack(w io.Writer, fsys vfs.FS, dir string, h *Header) error {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(window),
		zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true))
	if err != nil {
		return err
	}
	defer func() { _ = zw.Close() }()
	tw := tar.NewWriter(zw)
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	at := h.RetiredAt
	if err := tw.WriteHeader(&tar.Header{Name: HeaderName, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(hb)), ModTime: at}); err != nil {
		return err
	}
	if _, err := tw.Write(hb); err != nil {
		return err
	}
	for _, e := range h.Entries {
		if e.Dir {
			if err := tw.WriteHeader(&tar.Header{Name: e.Name + "/", Typeflag: tar.TypeDir, Mode: int64(e.Mode), ModTime: at}); err != nil {
				return err
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.Name, Typeflag: tar.TypeReg, Mode: int64(e.Mode), Size: e.Size, ModTime: at}); err != nil {
			return err
		}
		if err := copyFile(tw, fsys, path.Join(dir, e.Name), e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// copyFile copies the file at name into w, which must be e's bytes.
func copyFile(w io.Writer, fsys vfs.FS, name string, e Entry) error {
	f, err := fsys.OpenFile(name, layout.RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	hs := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, hs), io.LimitReader(f, e.Size+1))
	switch {
	case errors.Is(err, tar.ErrWriteTooLong) || n > e.Size:
		return fmt.Errorf("%w: %s grew while it was packed", ErrChanged, e.Name)
	case err != nil:
		return err
	case n != e.Size || hex.EncodeToString(hs.Sum(nil)) != e.SHA256:
		return fmt.Errorf("%w: %s changed while it was packed", ErrChanged, e.Name)
	}
	return nil
}

// Reader reads a pack member by member, checking each against the Header
// (which Open has checked) as it goes:
//
//	r, err := OpenReader(f, id)
//	for r.Next() { e, body := r.Entry(), r.Body() … }
//	err = r.Err() // nil only when every member was whole
type Reader struct {
	// Header is the pack's Header.
	Header Header
	zr     *zstd.Decoder
	tr     *tar.Reader
	name   string // the pack's file, for errors
	i      int    // the entry Next returned last; -1 before the first
	body   io.Reader
	hash   hash.Hash
	n      int64
	err    error
	done   bool
}

// NewReader reads the Header of the pack of session id from r (its file
// is name, for errors) and checks it.
func NewReader(r io.Reader, name string, id session.SessionID) (*Reader, error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(decoderMemory), zstd.WithDecoderMaxWindow(window))
	if err != nil {
		return nil, err
	}
	p := &Reader{zr: zr, tr: tar.NewReader(zr), name: name, i: -1}
	if err := p.readHeader(id); err != nil {
		zr.Close()
		return nil, err
	}
	return p, nil
}

func (p *Reader) corrupt(format string, args ...any) error {
	return &CorruptError{File: p.name, Err: fmt.Errorf(format, args...)}
}

func (p *Reader) readHeader(id session.SessionID) error {
	th, err := p.tr.Next()
	if err != nil {
		return p.corrupt("no header: %w", err)
	}
	if th.Name != HeaderName || th.Typeflag != tar.TypeReg || th.Size <= 0 || th.Size > maxHeaderBytes {
		return p.corrupt("first member is %q (%d bytes), not %s", th.Name, th.Size, HeaderName)
	}
	b, err := io.ReadAll(p.tr)
	if err != nil {
		return p.corrupt("read %s: %w", HeaderName, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p.Header); err != nil {
		return p.corrupt("%s: %w", HeaderName, err)
	}
	if dec.More() {
		return p.corrupt("%s: bytes after the object", HeaderName)
	}
	h := &p.Header
	switch {
	case h.V != HeaderVersion:
		return p.corrupt("%s: version %d (this program reads %d)", HeaderName, h.V, HeaderVersion)
	case h.ID != id:
		return p.corrupt("%s: session %q, not %q", HeaderName, h.ID, id)
	case len(h.Entries) > maxEntries:
		return p.corrupt("%s: %d entries (at most %d)", HeaderName, len(h.Entries), maxEntries)
	}
	if err := sessionstore.ValidateID(h.ID); err != nil {
		return p.corrupt("%s: %w", HeaderName, err)
	}
	seen := make(map[string]bool, len(h.Entries))
	var total int64
	for i, e := range h.Entries {
		if err := checkEntry(e, seen); err != nil {
			return p.corrupt("%s: entry %d: %w", HeaderName, i, err)
		}
		total += e.Size
	}
	if total != h.Bytes {
		return p.corrupt("%s: entries hold %d bytes, header says %d", HeaderName, total, h.Bytes)
	}
	return nil
}

// checkEntry checks one entry of a Header, given the entries before it.
func checkEntry(e Entry, seen map[string]bool) error {
	if !fs.ValidPath(e.Name) || e.Name == "." || strings.ContainsAny(e.Name, "\\\x00") || len(e.Name) > 4096 {
		return fmt.Errorf("invalid name %q", e.Name)
	}
	if seen[e.Name] {
		return fmt.Errorf("%q twice", e.Name)
	}
	if parent := path.Dir(e.Name); parent != "." && !seen[parent+"/"] {
		return fmt.Errorf("%q before its directory", e.Name)
	}
	if e.Mode&^fs.ModePerm != 0 {
		return fmt.Errorf("%q: mode %v is not permission bits", e.Name, e.Mode)
	}
	if e.Dir {
		if e.Size != 0 || e.SHA256 != "" {
			return fmt.Errorf("directory %q with a size or hash", e.Name)
		}
		seen[e.Name+"/"] = true
	} else if e.Size < 0 || len(e.SHA256) != 2*sha256.Size || strings.Trim(e.SHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("file %q: size %d, sha256 %q", e.Name, e.Size, e.SHA256)
	}
	seen[e.Name] = true
	return nil
}

// Next moves to the next entry, checking the one before it; false at the
// end or on an error (Err).
func (p *Reader) Next() bool {
	if p.err != nil || p.done {
		return false
	}
	if p.err = p.finishEntry(); p.err != nil {
		return false
	}
	p.i++
	th, err := p.tr.Next()
	if p.i == len(p.Header.Entries) {
		p.done = true
		if !errors.Is(err, io.EOF) {
			p.err = p.corrupt("a member after the last entry (%v)", err)
			return false
		}
		p.err = p.checkEnd()
		return false
	}
	if err != nil {
		p.err = p.corrupt("entry %d: %w", p.i, err)
		return false
	}
	e := p.Header.Entries[p.i]
	name, typ := e.Name, byte(tar.TypeReg)
	if e.Dir {
		name, typ = e.Name+"/", tar.TypeDir
	}
	if th.Name != name || th.Typeflag != typ || th.Size != e.Size {
		p.err = p.corrupt("member %d is %q (type %q, %d bytes), the header says %q (%d bytes)", p.i, th.Name, th.Typeflag, th.Size, name, e.Size)
		return false
	}
	p.hash, p.n = sha256.New(), 0
	p.body = io.TeeReader(p.tr, countingHash{p})
	return true
}

type countingHash struct{ p *Reader }

func (c countingHash) Write(b []byte) (int, error) {
	c.p.n += int64(len(b))
	return c.p.hash.Write(b)
}

// finishEntry reads what the caller left of the current entry and checks
// its hash.
func (p *Reader) finishEntry() error {
	if p.i < 0 || p.body == nil {
		return nil
	}
	if _, err := io.Copy(io.Discard, p.body); err != nil {
		return p.corrupt("entry %q: %w", p.Header.Entries[p.i].Name, err)
	}
	p.body = nil
	e := p.Header.Entries[p.i]
	if e.Dir {
		return nil
	}
	if p.n != e.Size || hex.EncodeToString(p.hash.Sum(nil)) != e.SHA256 {
		return p.corrupt("entry %q: its bytes do not match its SHA-256", e.Name)
	}
	return nil
}

// checkEnd requires nothing but tar's zero padding after the archive, and
// the zstd stream whole (its checksums).
func (p *Reader) checkEnd() error {
	var buf [4096]byte
	for {
		n, err := p.zr.Read(buf[:])
		if bytes.ContainsFunc(buf[:n], func(r rune) bool { return r != 0 }) {
			return p.corrupt("bytes after the archive")
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return p.corrupt("%w", err)
		}
	}
}

// Entry is the entry Next moved to.
func (p *Reader) Entry() Entry { return p.Header.Entries[p.i] }

// Body reads the current entry's bytes (a directory's: none). What the
// caller leaves is read and checked by the next Next.
func (p *Reader) Body() io.Reader { return p.body }

// Err is the first error Next met; nil after the last entry means the
// whole pack was read and every member matched the Header.
func (p *Reader) Err() error { return p.err }

// Whole reports whether Next has read the whole pack without an error.
func (p *Reader) Whole() bool { return p.done && p.err == nil }

// Close releases the decoder.
func (p *Reader) Close() { p.zr.Close() }
