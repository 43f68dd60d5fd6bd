package layout

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// File and directory names inside a store root. Every name that is not a
// session directory starts with a dot, which no valid session ID does
// (sessionstore.ValidateID), so the two can never collide.
const (
	// LogFile is a session's log.
	LogFile = "log.jsonl"
	// SummaryFile is a session's summary, a projection of its latest record.
	SummaryFile = "summary.json"
	// ArchiveDir holds a session's compacted segments.
	ArchiveDir = "archive"
	// ForensicDir holds the bytes recovery or repair removed.
	ForensicDir = "forensic"
	// BlobDir holds a session's content kept out of line.
	BlobDir = "blobs"
	// TmpDirPrefix starts the name of a session being created.
	TmpDirPrefix = ".tmp-"
	// TrashPrefix starts the name of a session being deleted.
	TrashPrefix = ".trash-"
)

// Modes and suffixes of the store's files.
const (
	RDONLY    = os.O_RDONLY // every read-only open
	DirPerm   = 0o700
	FilePerm  = 0o600
	TmpSuffix = ".tmp"
)

// SessionDir is session id's directory.
func SessionDir(id session.SessionID) string { return string(id) }

// LogPath is session id's log.
func LogPath(id session.SessionID) string { return string(id) + "/" + LogFile }

// SummaryPath is session id's summary.json.
func SummaryPath(id session.SessionID) string { return string(id) + "/" + SummaryFile }

// suffixBytes is the number of random bytes in the names of temporary and
// trash directories (randomSuffix: twice as many lower-case hex digits).
const suffixBytes = 8

// RandomSuffix is a fresh random suffix for a temporary or trash name.
func RandomSuffix() string {
	var b [suffixBytes]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// IsLeftover reports whether a root entry is named as the store names a
// session being created or deleted: .tmp-<id>-<suffix> or
// .trash-<id>-<suffix>, with a valid session ID and a suffix exactly as
// RandomSuffix makes them. Only such entries are ever swept: a store may
// share its directory with other things (a .trash-2023-photos is not
// ours).
func IsLeftover(name string) bool {
	rest, ok := strings.CutPrefix(name, TmpDirPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(name, TrashPrefix); !ok {
			return false
		}
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return false
	}
	id, suffix := rest[:i], rest[i+1:]
	return IsSuffix(suffix) && sessionstore.ValidateID(session.SessionID(id)) == nil
}

// IsSuffix reports whether s is a suffix as randomSuffix makes them.
func IsSuffix(s string) bool {
	return len(s) == 2*suffixBytes && strings.Trim(s, "0123456789abcdef") == ""
}

// sessionTemps are the prefixes of the temporary files the store writes
// in a session directory, each followed by a random suffix and TmpSuffix:
// a compaction's new log, a summary.json replacing a hard-linked one, a
// settings.json being written, and a redaction's new log and forensic
// copies.
var sessionTemps = []string{"." + LogFile + ".compact-", "." + SummaryFile + "-", "." + SettingsFile + "-", "." + LogFile + ".redact-", ".forensic.redact-"}

// IsSessionTemp reports whether name, in a session directory, is one of
// the store's temporary files (sessionTemps).
func IsSessionTemp(name string) bool {
	for _, prefix := range sessionTemps {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			if suffix, ok := strings.CutSuffix(rest, TmpSuffix); ok && IsSuffix(suffix) {
				return true
			}
		}
	}
	return false
}
