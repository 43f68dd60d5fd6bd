package logfile

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// SummaryFile is the content of summary.json: the projection of the log's
// Latest record, keyed by the exact log state it was computed from. It is a
// cache. The holder overwrites it in place after each append, without
// syncing, framed like a log record (a CRC-32C of the bytes before
// `,"crc":"`), padded with spaces to the length of what it replaces:
//
//	{"v":2,"log":{"dev":2049,"ino":1234},"log_size":5120,"log_mtime":1764410401123456789,
//	 "last_offset":4000,"revision":7,"summary":{…},"crc":"0a1b2c3d"}␠␠␠
//
// A reader may therefore find it missing, empty, torn (checksum mismatch),
// or stale after a crash or while it is being written; all of these count
// as absent. It is trusted as a cache only when the log it names is the log
// on disk — same identity, size and modification time (so a log changed in
// place behind the store's back, even to the same size, is read again) —
// and the record at LastOffset still carries Revision; otherwise readers
// compute the summary from the log's tail.
//
// It is also evidence: a summary written for this very log file (same
// identity, valid checksum, version 1 or 2) proves that Revision was
// committed at LastOffset, whatever the log's size now. A log whose last
// valid record is below it lost committed records (record.ClassifyTail).
//
// Why in place rather than temp-and-rename: creating and renaming a file
// per append makes every append's journal commit carry a new inode and
// directory updates (and on ext4 a forced flush of the renamed data),
// which measured at about half the raw append rate; an in-place overwrite
// of an allocated page costs next to nothing, and the checksum makes a
// torn summary as harmless as a missing one.
//
// An in-place write goes wherever the file's other names go, so it is made
// only to a file with a single link: before each write the holder checks
// the link count of its open descriptor (an fstat, no I/O), and a
// summary.json that shares its file with another name (a hard link
// planted in the directory, or one a backup tool restored) is replaced by
// a new file, through a temporary file and a rename (not synced), which
// leaves the other name untouched; later writes go in place again.
type SummaryFile struct {
	Version    int             `json:"v"`
	Log        vfs.Identity    `json:"log"`
	LogSize    int64           `json:"log_size"`
	LogMtime   int64           `json:"log_mtime,omitempty"` // nanoseconds since 1970 (version 2)
	LastOffset int64           `json:"last_offset"`
	Revision   uint64          `json:"revision"`
	Summary    summary.Summary `json:"summary"`
}

const (
	// summaryVersion is what writers write. Version 1 lacks log_mtime:
	// it is evidence, never a trusted cache.
	SummaryVersion  = 2
	MaxSummaryBytes = 256 << 10
)

// EncodeSummary encodes sf as writers write it (the current version,
// no lease status: that is computed when read).
func EncodeSummary(sf SummaryFile) ([]byte, error) {
	sf.Version = SummaryVersion
	sf.Summary.Lease = summary.LeaseStatus{} // computed when read, never cached
	return record.Frame(sf)
}

// DecodeSummary decodes a summary of either version; a cache user
// checks that Version is summaryVersion.
func DecodeSummary(b []byte, id session.SessionID) (SummaryFile, bool) {
	var sf SummaryFile
	if !layout.UnframeJSON(b, &sf) || !SummaryOf(id, sf.Version, sf.Summary.ID, sf.Revision, sf.Summary.Revision) {
		return SummaryFile{}, false
	}
	return sf, true
}

// SummaryOf reports whether a summary.json whose frame holds, of version
// v, for session sid, at revision rev, whose summary says revision srev,
// is one of session id that this program reads: the one rule for every
// reader of summary.json, whichever of its members it decodes (a cache
// user also checks that v is SummaryVersion).
func SummaryOf(id session.SessionID, v int, sid session.SessionID, rev, srev uint64) bool {
	return v >= 1 && v <= SummaryVersion && sid == id && rev != 0 && srev == rev
}

// ReadSummary returns session id's summary.json when it is one this
// program may use as a cache (the current version); a summary of an
// older version is only evidence (readEvidence).
func ReadSummary(fsys vfs.FS, id session.SessionID) (SummaryFile, bool) {
	b, err := summaryBytes(fsys, id)
	if err != nil {
		return SummaryFile{}, false
	}
	sf, ok := DecodeSummary(b, id)
	if !ok || sf.Version != SummaryVersion {
		return SummaryFile{}, false
	}
	return sf, true
}

// summaryEvidence is what a summary.json proves of committed revisions
// (Evidence): the members that name the log and the revision, without the
// summary's other members. It holds exactly when DecodeSummary's checks
// hold (SummaryOf: the frame's checksum, a version this program reads, the
// session's ID, a revision that the summary repeats); the other members
// are not decoded, so their values prove nothing either way. Decoding the
// whole summary was most of what reading the evidence cost (a search under
// load reads it for every log it reads the appends of).
type summaryEvidence struct {
	Version    int          `json:"v"`
	Log        vfs.Identity `json:"log"`
	LogSize    int64        `json:"log_size"`
	LastOffset int64        `json:"last_offset"`
	Revision   uint64       `json:"revision"`
	Summary    struct {
		ID       session.SessionID `json:"id"`
		Revision uint64            `json:"revision"`
	} `json:"summary"`
}

// decodeEvidence decodes b, a summary.json of session id, as evidence
// (summaryEvidence).
func decodeEvidence(b []byte, id session.SessionID) (summaryEvidence, bool) {
	var ev summaryEvidence
	if !layout.UnframeJSON(b, &ev) || !SummaryOf(id, ev.Version, ev.Summary.ID, ev.Revision, ev.Summary.Revision) {
		return summaryEvidence{}, false
	}
	return ev, true
}

// readEvidence reads session id's summary.json as evidence
// (summaryEvidence).
func readEvidence(fsys vfs.FS, id session.SessionID) (summaryEvidence, bool) {
	b, err := summaryBytes(fsys, id)
	if err != nil {
		return summaryEvidence{}, false
	}
	return decodeEvidence(b, id)
}

// summaryBytes reads session id's summary.json (at most MaxSummaryBytes).
func summaryBytes(fsys vfs.FS, id session.SessionID) ([]byte, error) {
	return vfs.ReadFile(fsys, layout.SummaryPath(id), MaxSummaryBytes)
}

// Matches reports whether sf was written for the log file fi describes as
// it is now: same identity, size and modification time.
func (sf SummaryFile) Matches(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && vfs.IdentityOf(fi) == sf.Log && fi.Size() == sf.LogSize && fi.ModTime().UnixNano() == sf.LogMtime
}

// SummaryWriter overwrites one session's summary.json in place.
type SummaryWriter struct {
	f   vfs.File
	len int64 // bytes currently in the file
	enc summaryEncoder
}

// write replaces the file's content with sf, padding with spaces over any
// longer previous content. It does not sync. It never writes through a
// hard link: a file with more than one link is replaced instead.
func (w *SummaryWriter) Write(dir vfs.FS, sf SummaryFile) error {
	b, err := w.enc.encode(sf)
	if err != nil {
		return err
	}
	if w.f == nil {
		f, err := dir.OpenFile(layout.SummaryFile, os.O_RDWR|os.O_CREATE, layout.FilePerm)
		if err != nil {
			return err
		}
		w.f = f
	}
	fi, err := w.f.Stat()
	if err != nil {
		w.Close()
		return err
	}
	if vfs.Links(fi) > 1 {
		// Replaced, not written: the new file has one link, and the next
		// write opens it and goes in place again.
		w.Close()
		return vfs.WriteFileAtomic(dir, ".", layout.SummaryFile, b, layout.FilePerm, false, "-"+layout.RandomSuffix())
	}
	w.len = fi.Size()
	for range w.len - int64(len(b)) {
		b = append(b, ' ') // in the encoder's memory, reused
	}
	if _, err := w.f.WriteAt(b, 0); err != nil {
		return err
	}
	w.len = max(w.len, int64(len(b)))
	return nil
}

// Close closes the file, unsynced.
func (w *SummaryWriter) Close() {
	if w.f != nil {
		_ = w.f.Close() // summary.json is never synced: a cache checked against the log
		w.f = nil
	}
}

// LatestSummary computes the summary of the view's latest revision from
// its last record and chain, without reading its pages (their messages
// are counted from the references) or any other blob: what a listing
// needs costs the stored snapshot, not the conversation.
func LatestSummary(fsys vfs.FS, id session.SessionID, v *View) (*record.Rec, summary.Summary, error) {
	last, snap, err := LatestSnapshot(fsys, id, v)
	if err != nil {
		return nil, summary.Summary{}, err
	}
	inline, pages, err := record.SplitPages(snap)
	if err != nil {
		return nil, summary.Summary{}, PageAt(id, last, err)
	}
	decoded, err := DecodeSnapshot(id, last, inline)
	if err != nil {
		return nil, summary.Summary{}, err
	}
	sum := ProjectRecord(last, &decoded, v.Size)
	for _, p := range pages {
		sum.MessageCount += p.Messages
	}
	return last, sum, nil
}

// ProjectRecord computes a session's summary from a record.
func ProjectRecord(rec *record.Rec, snap *sessnap.Snapshot, logSize int64) summary.Summary {
	// (A gap record is never a log's last: repair ends a log with a
	// readable revision.)
	s := summary.Project(snap, rec.Rev, rec.Gen, rec.Time)
	s.Sizes.LogBytes = logSize
	return s
}

// summaryEncoder is encodeSummaryFile at a writer's pace: successive
// summaries of one session differ mostly in the few members an append
// changes (the log's size, the revision, the record's time, the message
// count), so the encoder keeps the members of the summary it encoded in
// full last and, while every other field is the same, writes those again
// with only the changed members encoded anew. The bytes are those
// EncodeSummary writes (TestSummaryEncoderMatches): json.Marshal of a
// field's value is the value as it appears in the struct's encoding, for
// fields without omitempty, which the members encoded anew are (log_mtime,
// which has it, is encoded anew only while it stays nonzero).
type summaryEncoder struct {
	ok   bool
	last SummaryFile     // encoded in full last (its own Labels and Origin)
	top  []record.Member // its members, into enc
	sum  []record.Member // the members of its "summary", into enc
	buf  []byte          // the encoding returned last
}

// sameStable reports whether a and b agree in every field the encoder
// does not encode anew, so that their encodings differ only in those
// (TestSummaryEncoderFields keeps the list whole). Lease is not
// compared: it is never written.
func sameStable(a, b *SummaryFile) bool {
	x, y := &a.Summary, &b.Summary
	return a.Version == b.Version && a.Log == b.Log && (a.LogMtime != 0) == (b.LogMtime != 0) &&
		x.ID == y.ID && x.Title == y.Title && x.TitleProvenance == y.TitleProvenance && x.State == y.State &&
		x.StopReason == y.StopReason && x.Kind == y.Kind && x.ParentID == y.ParentID && x.Mode == y.Mode &&
		x.ProviderID == y.ProviderID && x.ModelID == y.ModelID && sameTime(x.CreatedAt, y.CreatedAt) &&
		x.LastError == y.LastError && x.Owner == y.Owner && maps.Equal(x.Labels, y.Labels) &&
		x.Project == y.Project && x.Dir == y.Dir && x.Branch == y.Branch &&
		(x.Origin == nil) == (y.Origin == nil) && (x.Origin == nil || *x.Origin == *y.Origin)
}

// sameTime reports whether a and b are written alike: the same instant in
// the same zone.
func sameTime(a, b time.Time) bool { return a.Equal(b) && a.Location() == b.Location() }

// encode returns encodeSummaryFile(sf), in memory that the next call
// reuses.
func (e *summaryEncoder) encode(sf SummaryFile) ([]byte, error) {
	sf.Version = SummaryVersion
	sf.Summary.Lease = summary.LeaseStatus{}
	if e.ok && sameStable(&sf, &e.last) {
		return e.reencode(&sf)
	}
	e.ok = false
	b, err := json.Marshal(sf)
	if err != nil {
		return nil, err
	}
	if top, err := record.Members(b); err == nil {
		for _, m := range top {
			if string(m.Key) == `"summary"` {
				if sum, err := record.Members(m.Value); err == nil {
					e.ok, e.top, e.sum = true, top, sum
				}
			}
		}
	}
	if e.ok {
		e.last = sf
		e.last.Summary.Labels = maps.Clone(sf.Summary.Labels)
		if o := sf.Summary.Origin; o != nil {
			cp := *o
			e.last.Summary.Origin = &cp
		}
	}
	e.buf = record.AppendCRC(append(e.buf[:0], b[:len(b)-1]...))
	return e.buf, nil
}

// reencode writes sf from the members of e.last, whose stable fields sf
// shares.
func (e *summaryEncoder) reencode(sf *SummaryFile) ([]byte, error) {
	b := append(e.buf[:0], '{')
	for i, m := range e.top {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, m.Key...), ':')
		switch string(m.Key) {
		case `"log_size"`:
			b = strconv.AppendInt(b, sf.LogSize, 10)
		case `"log_mtime"`:
			b = strconv.AppendInt(b, sf.LogMtime, 10)
		case `"last_offset"`:
			b = strconv.AppendInt(b, sf.LastOffset, 10)
		case `"revision"`:
			b = strconv.AppendUint(b, sf.Revision, 10)
		case `"summary"`:
			var err error
			if b, err = e.reencodeSummary(b, &sf.Summary); err != nil {
				return nil, err
			}
		default:
			b = append(b, m.Value...)
		}
	}
	e.buf = record.AppendCRC(b)
	return e.buf, nil
}

var logBytesKey = []byte(`{"log_bytes":`)

func (e *summaryEncoder) reencodeSummary(b []byte, s *summary.Summary) ([]byte, error) {
	last := &e.last.Summary
	b = append(b, '{')
	for i, m := range e.sum {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, m.Key...), ':')
		var v any // a value to marshal, when it changed
		switch string(m.Key) {
		case `"updated_at"`:
			if sameTime(s.UpdatedAt, last.UpdatedAt) {
				break // the same instant in the same zone: the same text
			}
			// As Time.MarshalJSON writes it: quoted strict RFC 3339.
			if t, err := s.UpdatedAt.AppendText(append(b, '"')); err == nil {
				b = append(t, '"')
				continue
			}
			v = s.UpdatedAt // json.Marshal reports the error
		case `"revision"`:
			b = strconv.AppendUint(b, s.Revision, 10)
			continue
		case `"generation"`:
			b = strconv.AppendUint(b, s.Generation, 10)
			continue
		case `"message_count"`:
			b = strconv.AppendInt(b, int64(s.MessageCount), 10)
			continue
		case `"counters"`:
			if s.Counters != last.Counters {
				v = s.Counters
			}
		case `"usage"`:
			if s.Usage != last.Usage {
				v = s.Usage
			}
		case `"sizes"`:
			// Mostly only the log's size changed: its number is spliced
			// into the members encoded last.
			rest, ok := bytes.CutPrefix(m.Value, logBytesKey)
			switch {
			case s.Sizes == last.Sizes:
			case ok && s.Sizes.ArchiveBytes == last.Sizes.ArchiveBytes && s.Sizes.ForensicBytes == last.Sizes.ForensicBytes:
				b = strconv.AppendInt(append(b, logBytesKey...), s.Sizes.LogBytes, 10)
				b = append(b, bytes.TrimLeft(rest, "-0123456789")...)
				continue
			default:
				v = s.Sizes
			}
		}
		if v == nil {
			b = append(b, m.Value...)
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	return append(b, '}'), nil
}
