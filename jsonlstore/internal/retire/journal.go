package retire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/session"
)

// The journal, .retired/journal.jsonl, is the append-only record of every
// retire and restore: one line each, framed like a log record (the JSON
// object's last key is "crc", the CRC-32C of the bytes before it), written
// with one write(2) to an O_APPEND descriptor and fdatasynced. A line is
// written once the new copy of the session is whole and durable and
// before the old copy is removed, so a line can name an operation that a
// crash then left with both copies; the next retire or restore of that
// session finishes it and writes a line of its own. Nothing ever rewrites
// or truncates the journal.

// Ops of the journal.
const (
	OpRetire  = "retire"
	OpRestore = "restore"
	OpRemove  = "rm" // a retired session deleted (sessions rm --retired)
)

// JournalVersion is the version of the journal's lines.
const JournalVersion = 1

// Event is one line of the journal.
type Event struct {
	V  int               `json:"v"`
	Op string            `json:"op"`
	ID session.SessionID `json:"id"`
	At time.Time         `json:"at"`
	// Bytes is the session's files; PackBytes and PackSHA256 the pack's
	// file (the one written by a retire, the one read by a restore).
	Bytes      int64  `json:"bytes"`
	PackBytes  int64  `json:"pack_bytes"`
	PackSHA256 string `json:"pack_sha256"`
	// Reason is why the session was chosen ("older than 720h0m0s",
	// "policy rule 2", "named"), or what finished ("superseded").
	Reason string `json:"reason,omitempty"`
	// Host and PID are the process that did it, for people.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// appendEvent appends ev to the journal durably.
func appendEvent(fsys vfs.FS, ev Event) error {
	ev.V = JournalVersion
	if ev.Host == "" {
		ev.Host, _ = os.Hostname()
	}
	if ev.PID == 0 {
		ev.PID = os.Getpid()
	}
	line, err := record.Frame(ev)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	_, statErr := fsys.Lstat(JournalFile)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := fsys.OpenFile(JournalFile, os.O_RDWR|os.O_APPEND|os.O_CREATE, layout.FilePerm)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	// A torn last line (a crash during an append) has no newline: start
	// on a line of its own, in the same write, so that the torn one stays
	// a line that readers skip.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if err := layout.WriteAll(f, line); err != nil {
		return err
	}
	if err := f.Datasync(); err != nil {
		return err
	}
	if created {
		return fsys.SyncDir(Dir) // the new name
	}
	return nil
}

// Events reads the journal, oldest first. A line that fails its checksum
// is reported (a *CorruptError, ErrCorrupt) and reading goes on; a torn
// last line (no newline) is what a crash during an append leaves, and is
// skipped.
func Events(fsys vfs.FS) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f, err := fsys.OpenFile(JournalFile, layout.RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		b, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			yield(Event{}, err)
			return
		}
		for n := 1; len(b) > 0; n++ {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return // a torn last line
			}
			line := b[:i]
			b = b[i+1:]
			if len(line) == 0 {
				continue
			}
			var ev Event
			body, ok := record.Unframe(line)
			if !ok || json.Unmarshal(body, &ev) != nil || ev.V != JournalVersion {
				if !yield(Event{}, &CorruptError{File: JournalFile, Err: fmt.Errorf("line %d does not read", n)}) {
					return
				}
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}
