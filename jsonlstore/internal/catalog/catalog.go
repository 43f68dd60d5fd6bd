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
	// labels is the encoded labels (see SetLabels): a piece of the
	// entries section for a decoded entry.
	labels string
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
	e.labels = ""
	if len(labels) == 0 {
		return nil
	}
	if len(labels) > session.MaxLabels {
		return fmt.Errorf("catalog: session %s: %d labels", e.ID, len(labels))
	}
	b := []byte{byte(len(labels))} //nolint:gosec // G115: at most session.MaxLabels, checked above
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if len(k) > 255 || len(v) > 1<<16-1 {
			return fmt.Errorf("catalog: session %s: label %q too long", e.ID, k)
		}
		b = append(b, byte(len(k))) //nolint:gosec // G115: at most 255, checked above
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(v))) //nolint:gosec // G115: below 2^16, checked above
		b = append(b, v...)
	}
	e.labels = string(b)
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
		k := b[1 : 1+kl]
		b = b[1+kl:]
		vl := u16(b, 0)
		out[k] = b[2 : 2+vl]
		b = b[2+vl:]
	}
	return out
}

// File is a catalog: its header and entries. To encode one, fill Entries;
// a decoded one holds its entries section as it is, and reads an entry when
// asked (Len, EntryID, Times, Entry), its summary from the file (Summary):
// a listing of ten thousand sessions decodes only what it looks at.
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
	// Entries are the entries to encode (nil in a decoded File).
	Entries []Entry

	ents string   // the entries section
	offs []uint32 // where each entry starts in ents
	// r reads the summaries section, which starts at sumBase.
	r       io.ReaderAt
	sumBase int64
	sumLen  int64
}

// Len is the number of entries of a decoded catalog.
func (f *File) Len() int { return len(f.offs) }

// EntryID is the ID of entry i (not checked: see Entry.ValidID).
func (f *File) EntryID(i int) session.SessionID {
	o := int(f.offs[i]) + fixedEntryBytes
	return session.SessionID(f.ents[o+1 : o+1+int(f.ents[o])])
}

// Unreadable reports whether entry i is of a session that could not be
// read when the entry was made (Entry.Unreadable), without decoding it.
func (f *File) Unreadable(i int) bool { return f.ents[f.offs[i]+4]&flagUnreadable != 0 }

// Times are entry i's created and updated times, read without decoding the
// rest of it.
func (f *File) Times(i int) (created, updated time.Time) {
	o := int(f.offs[i])
	created, _ = timeAt(f.ents, o+45)
	updated, _ = timeAt(f.ents, o+57)
	return created, updated
}

// Log is entry i's Entry.Log, read without decoding the rest of it.
func (f *File) Log(i int) LogState { return logAt(f.ents, int(f.offs[i])) }

func logAt(s string, o int) LogState {
	return LogState{Dev: u64(s, o+5), Ino: u64(s, o+13), Size: int64(u64(s, o+21)), Mtime: int64(u64(s, o+29))} //nolint:gosec // G115: two's complement, as encoded
}

// Entry decodes entry i, checking it (ErrDamaged). Its strings are pieces
// of the catalog's entries section.
func (f *File) Entry(i int) (Entry, error) {
	var e Entry
	if _, err := decodeEntry(f.ents[f.offs[i]:], &e, f.sumLen); err != nil {
		return Entry{}, fmt.Errorf("%w: entry %d: %w", ErrDamaged, i, err)
	}
	return e, nil
}

// Find returns the index of session id's entry, or -1.
func (f *File) Find(id session.SessionID) int {
	lo, hi := 0, len(f.offs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f.EntryID(m) < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(f.offs) && f.EntryID(lo) == id {
		return lo
	}
	return -1
}

// Summary returns entry i's summary bytes (the JSON of its summary, or why
// it is unreadable), checked against its checksum.
func (f *File) Summary(i int) ([]byte, error) {
	e, err := f.Entry(i)
	if err != nil {
		return nil, err
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
		ents = binary.LittleEndian.AppendUint16(ents, uint16(len(e.Project))) //nolint:gosec // G115: below 2^16, checked above
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

func appendShort(b []byte, s string) []byte {
	b = append(b, byte(len(s))) //nolint:gosec // G115: callers refuse strings above 255 bytes
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
		uint64(size) != HeaderSize+entLen+marksLen+sumLen {
		return nil, fmt.Errorf("%w: header does not fit the file", ErrDamaged)
	}
	// The entries section goes straight into the string the entries are
	// pieces of (a strings.Builder grown to size: one allocation), its
	// checksum computed on the way.
	var sb strings.Builder
	sb.Grow(int(entLen)) //nolint:gosec // G115: bounded above
	sum := crc32.New(castagnoli)
	if _, err := io.Copy(io.MultiWriter(&sb, sum), io.NewSectionReader(r, HeaderSize, int64(entLen))); err != nil { //nolint:gosec // G115: as above
		return nil, fmt.Errorf("%w: entries: %w", ErrDamaged, err)
	}
	if sb.Len() != int(entLen) || sum.Sum32() != le.Uint32(h[52:]) { //nolint:gosec // G115: as above
		return nil, fmt.Errorf("%w: entries checksum mismatch", ErrDamaged)
	}
	marks := make([]byte, marksLen)
	if _, err := r.ReadAt(marks, HeaderSize+int64(entLen)); err != nil && (len(marks) > 0 || !errors.Is(err, io.EOF)) { //nolint:gosec // G115: as above
		return nil, fmt.Errorf("%w: kept marks: %w", ErrDamaged, err)
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
	// Where each entry starts, its length and its ID's framing checked,
	// and the IDs in order: the rest of an entry is checked when it is
	// decoded (File.Entry).
	f.ents = sb.String()
	f.offs = make([]uint32, count)
	str := f.ents
	off := 0
	for i := range f.offs {
		if len(str)-off < fixedEntryBytes+1 {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrDamaged, i, errShort)
		}
		n := int(u32(str, off))
		idl := int(str[off+fixedEntryBytes])
		if n < fixedEntryBytes+1+idl || n > len(str)-off || idl == 0 {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrDamaged, i, errShort)
		}
		f.offs[i] = uint32(off) // a section of 2^32 bytes or more is refused below
		if int(f.offs[i]) != off {
			return nil, fmt.Errorf("%w: entries section too large", ErrDamaged)
		}
		if i > 0 && f.EntryID(i-1) >= f.EntryID(i) {
			return nil, fmt.Errorf("%w: entry %d: IDs out of order", ErrDamaged, i)
		}
		off += n
	}
	if off != len(str) {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", ErrDamaged, len(str)-off)
	}
	return f, nil
}

var errShort = errors.New("entry overruns the section")

func u16(s string, i int) int { return int(s[i]) | int(s[i+1])<<8 }

func u32(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

func u64(s string, i int) uint64 { return uint64(u32(s, i)) | uint64(u32(s, i+4))<<32 }

func timeAt(s string, i int) (time.Time, bool) {
	nsec := u32(s, i+8)
	if nsec >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(int64(u64(s, i)), int64(nsec)).UTC(), true //nolint:gosec // G115: as encoded
}

// decodeEntry decodes the entry at the start of s into e and returns its
// length. The entry's strings are pieces of s. Its ID is not checked here
// (ValidID): a listing checks the IDs it uses.
func decodeEntry(s string, e *Entry, sumLen int64) (int, error) {
	if len(s) < fixedEntryBytes {
		return 0, errShort
	}
	n := int(u32(s, 0))
	if n < fixedEntryBytes || n > len(s) {
		return 0, errShort
	}
	s = s[:n]
	flags := s[4]
	if flags&^flagUnreadable != 0 {
		return 0, fmt.Errorf("unknown flags %#x", flags)
	}
	e.Unreadable = flags&flagUnreadable != 0
	e.Log = logAt(s, 0)
	e.Revision = u64(s, 37)
	var ok1, ok2 bool
	e.Created, ok1 = timeAt(s, 45)
	e.Updated, ok2 = timeAt(s, 57)
	if !ok1 || !ok2 {
		return 0, errors.New("nanoseconds out of range")
	}
	off, l := u64(s, 69), u32(s, 77)
	if l > MaxSummaryBytes || off > uint64(sumLen) || uint64(l) > uint64(sumLen)-off { //nolint:gosec // G115: sumLen ≥ 0
		return 0, errors.New("summary outside the summaries section")
	}
	e.sumOff, e.sumLen, e.sumCRC = int64(off), l, u32(s, 81) //nolint:gosec // G115: bounded above
	i := fixedEntryBytes
	var strs [4]string
	for j := range strs {
		if len(s) < i+1 || len(s) < i+1+int(s[i]) {
			return 0, errShort
		}
		strs[j], i = s[i+1:i+1+int(s[i])], i+1+int(s[i])
	}
	if strs[0] == "" {
		return 0, errors.New("empty ID")
	}
	e.ID, e.State, e.Kind, e.ParentID = session.SessionID(strs[0]), session.State(strs[1]), session.SessionKind(strs[2]), session.SessionID(strs[3])
	if len(s) < i+2 || len(s) < i+2+u16(s, i) {
		return 0, errShort
	}
	e.Project, i = s[i+2:i+2+u16(s, i)], i+2+u16(s, i)
	if len(s) < i+1 {
		return 0, errShort
	}
	start, count := i, int(s[i])
	if count > session.MaxLabels {
		return 0, fmt.Errorf("%d labels", count)
	}
	i++
	for range count {
		if len(s) < i+1 || len(s) < i+1+int(s[i])+2 {
			return 0, errShort
		}
		i += 1 + int(s[i])
		vl := u16(s, i)
		if len(s) < i+2+vl {
			return 0, errShort
		}
		i += 2 + vl
	}
	if i != len(s) {
		return 0, fmt.Errorf("%d bytes after its labels", len(s)-i)
	}
	if count > 0 {
		e.labels = s[start:]
	}
	return n, nil
}

// ValidID reports whether the entry's ID is a valid session ID: a catalog
// that holds another is damaged (Decode leaves the check to the entries
// a listing uses).
func (e *Entry) ValidID() bool { return sessionstore.ValidateID(e.ID) == nil }

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
