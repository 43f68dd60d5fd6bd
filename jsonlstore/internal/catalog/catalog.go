package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// Version is the catalog format version this program writes and reads.
const Version = 1

// HeaderSize is the size of a catalog file's header.
const HeaderSize = 88

// Bounds a reader holds a catalog to, beyond which it is damaged.
const (
	// MaxEntries bounds the sessions of one catalog.
	MaxEntries = 1 << 24
	// MaxSummaryBytes bounds one entry's summary.
	MaxSummaryBytes = 256 << 10
	// maxEntryBytes bounds one entry of the entries section: its fixed
	// part and the most its strings and labels can take.
	maxEntryBytes = fixedEntryBytes + 4*(1+255) + 2 + 1<<16 + 1 + session.MaxLabels*(1+255+2+1<<16)
)

const (
	magic     = "SESSCAT\x00"
	rootMagic = "SESSROOT"
	// fixedEntryBytes is the fixed part of an entry, before the ID.
	fixedEntryBytes = 85
	flagUnreadable  = 1
)

// Errors of Decode and DecodeRoot.
var (
	// ErrDamaged reports bytes that are not a whole catalog (or root file)
	// of this version: torn, truncated, or damaged.
	ErrDamaged = errors.New("catalog: damaged")
	// ErrNewer reports a catalog written by a newer program.
	ErrNewer = errors.New("catalog: written by a newer version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// LogState is what the catalog records of the log an entry was computed
// from: its identity, size and modification time. An entry describes the
// log as it is on disk when these are the log's.
type LogState struct {
	Dev, Ino    uint64
	Size, Mtime int64
}

// Entry is one session of a catalog.
type Entry struct {
	ID session.SessionID
	// Unreadable is set for a session that could not be read when the
	// entry was made; Summary then says why.
	Unreadable bool
	Log        LogState
	Revision   uint64
	// Created and Updated are the summary's times (UTC when decoded).
	Created, Updated time.Time
	State            session.State
	Kind             session.SessionKind
	ParentID         session.SessionID
	Project          string
	// labels is the encoded labels (see SetLabels): a view into the file
	// for a decoded entry.
	labels []byte
	// Summary is the summary's JSON (or the reason it is unreadable) of
	// an entry to encode; nil for a decoded one, whose summary File.Summary
	// reads.
	Summary []byte
	sumOff  int64
	sumLen  uint32
	sumCRC  uint32
}

// SetLabels records labels as the entry's. It refuses what the codec
// cannot hold (the domain's bounds are within it).
func (e *Entry) SetLabels(labels map[string]string) error {
	e.labels = nil
	if len(labels) == 0 {
		return nil
	}
	if len(labels) > session.MaxLabels {
		return fmt.Errorf("catalog: session %s: %d labels", e.ID, len(labels))
	}
	b := []byte{byte(len(labels))}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if len(k) > 255 || len(v) > 1<<16-1 {
			return fmt.Errorf("catalog: session %s: label %q too long", e.ID, k)
		}
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	e.labels = b
	return nil
}

// HasLabels reports whether the entry carries labels.
func (e *Entry) HasLabels() bool { return len(e.labels) > 0 }

// Labels returns the entry's labels (nil when it has none). Decode checked
// their encoding, so this cannot fail.
func (e *Entry) Labels() map[string]string {
	if len(e.labels) == 0 {
		return nil
	}
	b := e.labels
	n := int(b[0])
	b = b[1:]
	out := make(map[string]string, n)
	for range n {
		kl := int(b[0])
		k := string(b[1 : 1+kl])
		b = b[1+kl:]
		vl := int(binary.LittleEndian.Uint16(b))
		out[k] = string(b[2 : 2+vl])
		b = b[2+vl:]
	}
	return out
}

// File is a catalog: its header and entries. The summaries stay where they
// are until Summary reads one.
type File struct {
	ID uint64
	// Written is when it was written (nanoseconds).
	Written int64
	// Marks is the identity of the marks directory the catalog was written
	// against (device, inode): another directory there means marks may
	// have been lost.
	MarksDev, MarksIno uint64
	// Kept names the marks its writer left in place (their sessions were
	// held, or being created), sorted: each must still be there for the
	// catalog to be believed, since only a catalog's writer removes a mark
	// it knew of, after writing a catalog that no longer keeps it.
	Kept []string
	// Entries are in ID order.
	Entries []Entry
	// r reads the summaries section, which starts at sumBase.
	r       io.ReaderAt
	sumBase int64
	sumLen  int64
}

// Find returns the index of session id's entry, or -1.
func (f *File) Find(id session.SessionID) int {
	i, ok := slices.BinarySearchFunc(f.Entries, id, func(e Entry, id session.SessionID) int {
		return strings.Compare(string(e.ID), string(id))
	})
	if !ok {
		return -1
	}
	return i
}

// Summary returns entry i's summary bytes (the JSON of its summary, or why
// it is unreadable), checked against its checksum.
func (f *File) Summary(i int) ([]byte, error) {
	e := &f.Entries[i]
	if e.Summary != nil {
		return e.Summary, nil
	}
	b := make([]byte, e.sumLen)
	if _, err := f.r.ReadAt(b, f.sumBase+e.sumOff); err != nil && (len(b) > 0 || !errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("%w: summary of %s: %w", ErrDamaged, e.ID, err)
	}
	if crc32.Checksum(b, castagnoli) != e.sumCRC {
		return nil, fmt.Errorf("%w: summary of %s: checksum mismatch", ErrDamaged, e.ID)
	}
	return b, nil
}

// Encode returns the catalog file of f, whose entries carry their Summary
// bytes. It sorts the entries by ID and refuses duplicates and values the
// format cannot hold.
func Encode(f *File) ([]byte, error) {
	if f.ID == 0 {
		return nil, errors.New("catalog: catalog ID 0")
	}
	es := f.Entries
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if len(es) > MaxEntries {
		return nil, fmt.Errorf("catalog: %d entries (at most %d)", len(es), MaxEntries)
	}
	var ents, sums []byte
	for i := range es {
		e := &es[i]
		if i > 0 && es[i-1].ID == e.ID {
			return nil, fmt.Errorf("catalog: session %s twice", e.ID)
		}
		if len(e.Summary) > MaxSummaryBytes {
			return nil, fmt.Errorf("catalog: session %s: summary of %d bytes", e.ID, len(e.Summary))
		}
		for _, s := range []string{string(e.ID), string(e.State), string(e.Kind), string(e.ParentID)} {
			if len(s) > 255 {
				return nil, fmt.Errorf("catalog: session %s: %q too long", e.ID, s)
			}
		}
		if len(e.Project) > 1<<16-1 {
			return nil, fmt.Errorf("catalog: session %s: project too long", e.ID)
		}
		start := len(ents)
		ents = append(ents, 0, 0, 0, 0) // the length, below
		var flags byte
		if e.Unreadable {
			flags |= flagUnreadable
		}
		ents = append(ents, flags)
		ents = binary.LittleEndian.AppendUint64(ents, e.Log.Dev)
		ents = binary.LittleEndian.AppendUint64(ents, e.Log.Ino)
		ents = binary.LittleEndian.AppendUint64(ents, uint64(e.Log.Size))  //nolint:gosec // G115: two's complement, decoded back
		ents = binary.LittleEndian.AppendUint64(ents, uint64(e.Log.Mtime)) //nolint:gosec // G115: as above
		ents = binary.LittleEndian.AppendUint64(ents, e.Revision)
		ents = appendTime(ents, e.Created)
		ents = appendTime(ents, e.Updated)
		ents = binary.LittleEndian.AppendUint64(ents, uint64(len(sums)))
		ents = binary.LittleEndian.AppendUint32(ents, uint32(len(e.Summary))) //nolint:gosec // G115: bounded by MaxSummaryBytes
		ents = binary.LittleEndian.AppendUint32(ents, crc32.Checksum(e.Summary, castagnoli))
		sums = append(sums, e.Summary...)
		ents = appendShort(ents, string(e.ID))
		ents = appendShort(ents, string(e.State))
		ents = appendShort(ents, string(e.Kind))
		ents = appendShort(ents, string(e.ParentID))
		ents = binary.LittleEndian.AppendUint16(ents, uint16(len(e.Project)))
		ents = append(ents, e.Project...)
		if len(e.labels) == 0 {
			ents = append(ents, 0)
		} else {
			ents = append(ents, e.labels...)
		}
		binary.LittleEndian.PutUint32(ents[start:], uint32(len(ents)-start)) //nolint:gosec // G115: bounded by maxEntryBytes
	}
	kept := slices.Sorted(slices.Values(f.Kept))
	if len(kept) > MaxEntries {
		return nil, fmt.Errorf("catalog: %d kept marks", len(kept))
	}
	var marks []byte
	for i, name := range kept {
		if len(name) == 0 || len(name) > 255 || (i > 0 && kept[i-1] == name) {
			return nil, fmt.Errorf("catalog: kept mark %q", name)
		}
		marks = appendShort(marks, name)
	}
	out := make([]byte, 0, HeaderSize+len(ents)+len(marks)+len(sums))
	out = append(out, magic...)
	out = binary.LittleEndian.AppendUint32(out, Version)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(es))) //nolint:gosec // G115: bounded by MaxEntries
	out = binary.LittleEndian.AppendUint64(out, f.ID)
	out = binary.LittleEndian.AppendUint64(out, uint64(f.Written)) //nolint:gosec // G115: two's complement, decoded back
	out = binary.LittleEndian.AppendUint64(out, f.MarksDev)
	out = binary.LittleEndian.AppendUint64(out, f.MarksIno)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(kept))) //nolint:gosec // G115: bounded above
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(ents, castagnoli))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(ents)))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(sums)))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(marks)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(marks, castagnoli))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	out = append(out, ents...)
	out = append(out, marks...)
	return append(out, sums...), nil
}

// appendTime appends t as seconds since 1970 (two's complement, eight
// bytes) and nanoseconds (four): every time.Time, the zero one included.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Unix()))          //nolint:gosec // G115: two's complement, decoded back
	return binary.LittleEndian.AppendUint32(b, uint32(t.Nanosecond())) //nolint:gosec // G115: < 1e9
}

func readTime(b []byte) (time.Time, bool) {
	nsec := binary.LittleEndian.Uint32(b[8:])
	if nsec >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.LittleEndian.Uint64(b)), int64(nsec)).UTC(), true //nolint:gosec // G115: as encoded
}

func appendShort(b []byte, s string) []byte {
	b = append(b, byte(len(s)))
	return append(b, s...)
}

// Decode reads the catalog of size bytes from r: its header and entries,
// checked (ErrDamaged, ErrNewer). The summaries are read from r later, by
// File.Summary, so r must stay open while the File is used.
func Decode(r io.ReaderAt, size int64) (*File, error) {
	var h [HeaderSize]byte
	if size < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrDamaged, size)
	}
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrDamaged, err)
	}
	if string(h[:8]) != magic {
		return nil, fmt.Errorf("%w: not a catalog", ErrDamaged)
	}
	le := binary.LittleEndian
	if crc32.Checksum(h[:84], castagnoli) != le.Uint32(h[84:]) {
		return nil, fmt.Errorf("%w: header checksum mismatch", ErrDamaged)
	}
	if v := le.Uint32(h[8:]); v != Version {
		if v > Version {
			return nil, fmt.Errorf("%w: version %d", ErrNewer, v)
		}
		return nil, fmt.Errorf("%w: version %d", ErrDamaged, v)
	}
	count, keptCount := le.Uint32(h[12:]), le.Uint32(h[48:])
	f := &File{
		ID: le.Uint64(h[16:]), Written: int64(le.Uint64(h[24:])), //nolint:gosec // G115: two's complement, as encoded
		MarksDev: le.Uint64(h[32:]), MarksIno: le.Uint64(h[40:]),
		r: r, sumBase: HeaderSize,
	}
	entLen, sumLen, marksLen := le.Uint64(h[56:]), le.Uint64(h[64:]), le.Uint64(h[72:])
	if f.ID == 0 || count > MaxEntries || keptCount > MaxEntries ||
		entLen > uint64(count)*maxEntryBytes || sumLen > uint64(count)*MaxSummaryBytes || marksLen > uint64(keptCount)*256 ||
		uint64(size) != HeaderSize+entLen+marksLen+sumLen { //nolint:gosec // G115: size ≥ HeaderSize
		return nil, fmt.Errorf("%w: header does not fit the file", ErrDamaged)
	}
	// The entries and the kept marks, one read.
	both := make([]byte, entLen+marksLen)
	if _, err := r.ReadAt(both, HeaderSize); err != nil && (len(both) > 0 || !errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("%w: entries: %w", ErrDamaged, err)
	}
	ents, marks := both[:entLen], both[entLen:]
	if crc32.Checksum(ents, castagnoli) != le.Uint32(h[52:]) {
		return nil, fmt.Errorf("%w: entries checksum mismatch", ErrDamaged)
	}
	if crc32.Checksum(marks, castagnoli) != le.Uint32(h[80:]) {
		return nil, fmt.Errorf("%w: kept marks checksum mismatch", ErrDamaged)
	}
	for range keptCount {
		if len(marks) < 1 || int(marks[0]) == 0 || len(marks) < 1+int(marks[0]) {
			return nil, fmt.Errorf("%w: kept marks overrun their section", ErrDamaged)
		}
		name := string(marks[1 : 1+int(marks[0])])
		if n := len(f.Kept); n > 0 && f.Kept[n-1] >= name {
			return nil, fmt.Errorf("%w: kept marks out of order", ErrDamaged)
		}
		f.Kept = append(f.Kept, name)
		marks = marks[1+int(marks[0]):]
	}
	if len(marks) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the kept marks", ErrDamaged, len(marks))
	}
	f.sumBase += int64(entLen + marksLen) //nolint:gosec // G115: bounded above
	f.sumLen = int64(sumLen)              //nolint:gosec // G115: as above
	f.Entries = make([]Entry, count)
	d := decoder{interned: map[string]string{}}
	for i := range f.Entries {
		e := &f.Entries[i]
		n, err := d.entry(ents, e, f.sumLen)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrDamaged, i, err)
		}
		ents = ents[n:]
		if i > 0 && strings.Compare(string(f.Entries[i-1].ID), string(e.ID)) >= 0 {
			return nil, fmt.Errorf("%w: entry %d: IDs out of order", ErrDamaged, i)
		}
	}
	if len(ents) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", ErrDamaged, len(ents))
	}
	return f, nil
}

// decoder decodes entries, sharing the strings that repeat (states,
// kinds, projects) so that ten thousand entries make few of them.
type decoder struct {
	interned map[string]string
}

func (d *decoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.interned) < 4096 {
		d.interned[s] = s
	}
	return s
}

var errShort = errors.New("entry overruns the section")

// entry decodes the entry at the start of b into e and returns its length.
func (d *decoder) entry(b []byte, e *Entry, sumLen int64) (int, error) {
	le := binary.LittleEndian
	if len(b) < fixedEntryBytes {
		return 0, errShort
	}
	n := int(le.Uint32(b))
	if n < fixedEntryBytes || n > len(b) {
		return 0, errShort
	}
	b = b[:n]
	flags := b[4]
	if flags&^flagUnreadable != 0 {
		return 0, fmt.Errorf("unknown flags %#x", flags)
	}
	e.Unreadable = flags&flagUnreadable != 0
	e.Log = LogState{Dev: le.Uint64(b[5:]), Ino: le.Uint64(b[13:]),
		Size: int64(le.Uint64(b[21:])), Mtime: int64(le.Uint64(b[29:]))} //nolint:gosec // G115: two's complement, as encoded
	e.Revision = le.Uint64(b[37:])
	var ok1, ok2 bool
	e.Created, ok1 = readTime(b[45:])
	e.Updated, ok2 = readTime(b[57:])
	if !ok1 || !ok2 {
		return 0, errors.New("nanoseconds out of range")
	}
	off, l := le.Uint64(b[69:]), le.Uint32(b[77:])
	if l > MaxSummaryBytes || off > uint64(sumLen) || uint64(l) > uint64(sumLen)-off { //nolint:gosec // G115: sumLen ≥ 0
		return 0, errors.New("summary outside the summaries section")
	}
	e.sumOff, e.sumLen, e.sumCRC = int64(off), l, le.Uint32(b[81:]) //nolint:gosec // G115: bounded above
	rest := b[fixedEntryBytes:]
	var strs [4][]byte
	for j := range strs {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return 0, errShort
		}
		strs[j], rest = rest[1:1+int(rest[0])], rest[1+int(rest[0]):]
	}
	e.ID = session.SessionID(strs[0])
	if err := sessionstore.ValidateID(e.ID); err != nil {
		return 0, err
	}
	e.State, e.Kind = session.State(d.intern(strs[1])), session.SessionKind(d.intern(strs[2]))
	if len(strs[3]) > 0 {
		e.ParentID = session.SessionID(strs[3])
	}
	if len(rest) < 2 || len(rest) < 2+int(le.Uint16(rest)) {
		return 0, errShort
	}
	pl := int(le.Uint16(rest))
	e.Project, rest = d.intern(rest[2:2+pl]), rest[2+pl:]
	if len(rest) < 1 {
		return 0, errShort
	}
	labels := rest
	count := int(rest[0])
	if count > session.MaxLabels {
		return 0, fmt.Errorf("%d labels", count)
	}
	rest = rest[1:]
	for range count {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+2 {
			return 0, errShort
		}
		kl := int(rest[0])
		rest = rest[1+kl:]
		vl := int(le.Uint16(rest))
		if len(rest) < 2+vl {
			return 0, errShort
		}
		rest = rest[2+vl:]
	}
	if len(rest) != 0 {
		return 0, fmt.Errorf("%d bytes after its labels", len(rest))
	}
	if count > 0 {
		e.labels = labels
	}
	return n, nil
}

// DirState is what a stat tells of a directory whose entries change:
// another value means its entries may have changed. ctime is in it
// because no call sets it back; mtime, links and size because they are
// free.
type DirState struct {
	Dev, Ino, Nlink    uint64
	Size, Mtime, Ctime int64
}

// Root is the root directory as a catalog's writer (or a listing that
// checked the catalog against it) saw it: while the root still looks so,
// and the look was settled (Settled), the sessions under it are the
// catalog's.
type Root struct {
	Catalog  uint64
	Dir      DirState
	Observed int64
}

// RootSize is the size of a root file.
const RootSize = 80

// EncodeRoot returns the root file of r.
func EncodeRoot(r Root) []byte {
	le := binary.LittleEndian
	b := make([]byte, 0, RootSize)
	b = append(b, rootMagic...)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint64(b, r.Catalog)
	b = le.AppendUint64(b, r.Dir.Dev)
	b = le.AppendUint64(b, r.Dir.Ino)
	b = le.AppendUint64(b, r.Dir.Nlink)
	b = le.AppendUint64(b, uint64(r.Dir.Size))  //nolint:gosec // G115: two's complement, decoded back
	b = le.AppendUint64(b, uint64(r.Dir.Mtime)) //nolint:gosec // G115: as above
	b = le.AppendUint64(b, uint64(r.Dir.Ctime)) //nolint:gosec // G115: as above
	b = le.AppendUint64(b, uint64(r.Observed))  //nolint:gosec // G115: as above
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeRoot decodes a root file (ErrDamaged, ErrNewer).
func DecodeRoot(b []byte) (Root, error) {
	le := binary.LittleEndian
	if len(b) < 12 || string(b[:8]) != rootMagic {
		return Root{}, fmt.Errorf("%w: not a root file", ErrDamaged)
	}
	if v := le.Uint32(b[8:]); v != Version {
		if v > Version {
			return Root{}, fmt.Errorf("%w: root file version %d", ErrNewer, v)
		}
		return Root{}, fmt.Errorf("%w: root file version %d", ErrDamaged, v)
	}
	if len(b) != RootSize || crc32.Checksum(b[:76], castagnoli) != le.Uint32(b[76:]) {
		return Root{}, fmt.Errorf("%w: root file", ErrDamaged)
	}
	return Root{
		Catalog: le.Uint64(b[12:]),
		Dir: DirState{Dev: le.Uint64(b[20:]), Ino: le.Uint64(b[28:]), Nlink: le.Uint64(b[36:]),
			Size: int64(le.Uint64(b[44:])), Mtime: int64(le.Uint64(b[52:])), Ctime: int64(le.Uint64(b[60:]))}, //nolint:gosec // G115: as encoded
		Observed: int64(le.Uint64(b[68:])), //nolint:gosec // G115: as encoded
	}, nil
}

// SettleTime is how long after a directory's last change a look at it
// must be for its times to tell every later change apart: file systems
// stamp changes with a clock that advances in ticks (a few milliseconds on
// Linux, a second or two on some file systems), so two changes within one
// tick look the same.
const SettleTime = 2_000_000_000

// Settled reports whether a look at dir, at observed, came at least
// SettleTime after its last change: then any change after the look gives
// the directory other times.
func Settled(dir DirState, observed int64) bool {
	return observed-max(dir.Mtime, dir.Ctime) >= SettleTime
}

// MarkName is the name, in the marks directory, of the mark of session id
// acquired with generation gen.
func MarkName(id session.SessionID, gen uint64) string {
	return string(id) + "." + strconv.FormatUint(gen, 10)
}

// ParseMark parses a mark's name.
func ParseMark(name string) (session.SessionID, uint64, bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", 0, false
	}
	gen, err := strconv.ParseUint(name[i+1:], 10, 64)
	id := session.SessionID(name[:i])
	if err != nil || gen == 0 || name[i+1] == '+' || name[i+1:] != strconv.FormatUint(gen, 10) || sessionstore.ValidateID(id) != nil {
		return "", 0, false
	}
	return id, gen, true
}
