package fslease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	// RecordVersion is the version of lease.json this package writes.
	// Records with a higher version are not interpreted (ErrFutureVersion),
	// except that their generation, if it can be read, still bounds the next
	// one from below.
	RecordVersion = 1

	// MaxGeneration is the highest generation ever written: 2^53-1, the
	// largest integer every JSON reader (JavaScript, jq) reads exactly.
	// Generations above it are treated as overflow.
	MaxGeneration = 1<<53 - 1

	// MaxRecordSize caps how much of lease.json is read. A larger file is
	// corrupt; only its first MaxRecordSize bytes are ever held in memory.
	MaxRecordSize = 64 << 10
)

// Identity describes the process that holds (or held) a lease. It is for
// people and diagnostics only: liveness is decided by the lock, never by
// these fields.
type Identity struct {
	// Host is os.Hostname of the holder.
	Host string `json:"host"`
	// PID is the holder's process ID.
	PID int `json:"pid"`
	// PIDStart is when the holder process started, zero where unavailable.
	// Together with PID it tells a reused pid from the original process.
	PIDStart time.Time `json:"pid_start,omitzero"`
	// PIDStartTicks is the raw start time in clock ticks since boot, field
	// 22 of /proc/<pid>/stat on Linux (exact, unlike PIDStart, which is
	// derived from the boot time in whole seconds); zero elsewhere.
	PIDStartTicks uint64 `json:"pid_start_ticks,omitempty"`
	// BootID is /proc/sys/kernel/random/boot_id on Linux and
	// kern.bootsessionuuid on macOS; empty where unavailable.
	BootID string `json:"boot_id,omitempty"`
	// Nonce is random hex, unique per acquisition. Fencing compares it.
	Nonce string `json:"nonce"`
	// Label is the caller's Options.Label.
	Label string `json:"label,omitempty"`
}

// Record is the content of lease.json. Times are UTC.
type Record struct {
	// Version is the record format version, RecordVersion when written by
	// this package.
	Version int `json:"version"`
	// Generation is the lease generation, at least 1 and at most
	// MaxGeneration; every acquisition writes a higher one.
	Generation uint64 `json:"generation"`
	// Owner identifies the holder.
	Owner Identity `json:"owner"`
	// AcquiredAt is when the holder acquired the lease.
	AcquiredAt time.Time `json:"acquired_at"`
	// HeartbeatAt is the holder's last heartbeat (AcquiredAt at first, the
	// release time once Released). A holder's touches (Lease.Touch) are
	// not in the record but on lease.lock: Status.ActiveAt is the later of
	// the two.
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Released is true once the holder released the lease cleanly.
	Released bool `json:"released"`
}

// encodeRecord returns the bytes of lease.json for r: indented JSON and a
// final newline, so that people can cat and jq it.
func encodeRecord(r Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode lease record: %w", err)
	}
	return buf.Bytes(), nil
}

// parseRecord parses and validates the bytes of lease.json. Errors wrap
// ErrCorruptRecord or ErrFutureVersion. Times come back in UTC, so a parsed
// record compares equal to the one that was written.
//
// Unknown fields are skipped deliberately: a later version that adds a
// field without changing the meaning of the others need not bump Version,
// and this version can still read its records.
func parseRecord(data []byte) (Record, error) {
	if len(data) > MaxRecordSize {
		return Record{}, fmt.Errorf("%w: larger than %d bytes", ErrCorruptRecord, MaxRecordSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Record{}, fmt.Errorf("%w: empty", ErrCorruptRecord)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		// A newer writer may have changed a field's type; say "newer
		// version" rather than "corrupt" when the version is readable.
		if s := salvage(data); s.hasVersion && s.version > RecordVersion {
			return Record{}, fmt.Errorf("%w: version %d", ErrFutureVersion, s.version)
		}
		return Record{}, fmt.Errorf("%w: %w", ErrCorruptRecord, err)
	}
	switch {
	case r.Version > RecordVersion:
		return Record{}, fmt.Errorf("%w: version %d, this package reads %d", ErrFutureVersion, r.Version, RecordVersion)
	case r.Version < 1:
		return Record{}, fmt.Errorf("%w: version %d", ErrCorruptRecord, r.Version)
	case r.Generation == 0:
		return Record{}, fmt.Errorf("%w: generation 0", ErrCorruptRecord)
	case r.Generation > MaxGeneration:
		return Record{}, fmt.Errorf("%w: generation %d above %d", ErrCorruptRecord, r.Generation, uint64(MaxGeneration))
	}
	for _, t := range []*time.Time{&r.Owner.PIDStart, &r.AcquiredAt, &r.HeartbeatAt} {
		if t.IsZero() {
			*t = time.Time{}
			continue
		}
		*t = t.UTC()
		// encoding/json writes only years 0-9999; refuse what we could not
		// write back.
		if y := t.Year(); y < 0 || y > 9999 {
			return Record{}, fmt.Errorf("%w: time %s out of range", ErrCorruptRecord, t)
		}
	}
	return r, nil
}

// salvaged is what a lenient scan of an unparseable lease.json found.
type salvaged struct {
	hasVersion    bool
	version       int64
	hasGeneration bool
	generation    uint64 // saturates at math.MaxUint64
}

// salvage scans the top-level object of a damaged or foreign lease.json
// token by token and returns the version and the highest generation it
// meets before the damage. A truncated record still yields its generation,
// so recovery from it never reuses a generation the file shows. Keys are
// matched case-insensitively, as encoding/json does.
func salvage(data []byte) salvaged {
	var s salvaged
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return s
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return s
		}
		key, ok := tok.(string)
		if !ok {
			return s
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return s
		}
		switch {
		case strings.EqualFold(key, "generation"):
			if g, ok := parseGeneration(raw); ok && (!s.hasGeneration || g > s.generation) {
				s.hasGeneration, s.generation = true, g
			}
		case strings.EqualFold(key, "version"):
			if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
				s.hasVersion, s.version = true, v
			}
		}
	}
	return s
}

// parseGeneration reads a non-negative JSON integer, saturating at
// math.MaxUint64 when it is too large: a huge generation must still stop
// the next acquisition (ErrOverflow), never be forgotten.
func parseGeneration(raw json.RawMessage) (uint64, bool) {
	s := string(raw)
	g, err := strconv.ParseUint(s, 10, 64)
	if err == nil {
		return g, true
	}
	var numErr *strconv.NumError
	if errors.As(err, &numErr) && errors.Is(numErr.Err, strconv.ErrRange) {
		return ^uint64(0), true
	}
	return 0, false
}

// loaded is what loadRecord found in lease.json.
type loaded struct {
	exists bool        // the file exists
	rec    Record      // valid when exists and err == nil
	err    error       // why the existing file is unreadable (ErrCorruptRecord, ErrFutureVersion)
	floor  uint64      // highest generation the file evidences, 0 if none
	stat   fs.FileInfo // of the file read, when it exists
}

// loadRecord reads lease.json without following a symlink and without
// reading more than MaxRecordSize bytes. The returned error is for I/O
// failures and unsafe files (ErrSymlink, ErrNotRegular); a damaged record is
// reported in loaded.err instead.
func loadRecord(path string) (loaded, error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return loaded{}, nil
	}
	if err != nil {
		return loaded{}, err
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := statRegular(f, path)
	if err != nil {
		return loaded{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRecordSize+1))
	if err != nil {
		return loaded{}, fmt.Errorf("read %s: %w", path, err)
	}
	ld := loaded{exists: true, stat: fi}
	ld.rec, ld.err = parseRecord(data)
	if ld.err == nil {
		ld.floor = ld.rec.Generation
		return ld, nil
	}
	ld.rec = Record{}
	if len(data) > MaxRecordSize {
		data = data[:MaxRecordSize]
	}
	if s := salvage(data); s.hasGeneration {
		ld.floor = s.generation
	}
	return ld, nil
}
