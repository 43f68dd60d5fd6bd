package jsonlstore

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
	LogFile      = "log.jsonl"
	SummaryFile  = "summary.json"
	ArchiveDir   = "archive"
	ForensicDir  = "forensic"
	tmpDirPrefix = ".tmp-"   // a session being created
	trashPrefix  = ".trash-" // a session being deleted
)

const (
	osRDONLY  = os.O_RDONLY
	dirPerm   = 0o700
	filePerm  = 0o600
	tmpSuffix = ".tmp"
)

func sessionDir(id session.SessionID) string { return string(id) }

func logPath(id session.SessionID) string { return string(id) + "/" + LogFile }

func summaryPath(id session.SessionID) string { return string(id) + "/" + SummaryFile }

// suffixBytes is the number of random bytes in the names of temporary and
// trash directories (randomSuffix: twice as many lower-case hex digits).
const suffixBytes = 8

func randomSuffix() string {
	var b [suffixBytes]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isLeftover reports whether a root entry is named as the store names a
// session being created or deleted: .tmp-<id>-<suffix> or
// .trash-<id>-<suffix>, with a valid session ID and a suffix exactly as
// randomSuffix makes them. Only such entries are ever swept: a store may
// share its directory with other things (a .trash-2023-photos is not
// ours).
func isLeftover(name string) bool {
	rest, ok := strings.CutPrefix(name, tmpDirPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(name, trashPrefix); !ok {
			return false
		}
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return false
	}
	id, suffix := rest[:i], rest[i+1:]
	return isSuffix(suffix) && sessionstore.ValidateID(session.SessionID(id)) == nil
}

// isSuffix reports whether s is a suffix as randomSuffix makes them.
func isSuffix(s string) bool {
	return len(s) == 2*suffixBytes && strings.Trim(s, "0123456789abcdef") == ""
}

// sessionTemps are the prefixes of the temporary files the store writes
// in a session directory, each followed by a random suffix and tmpSuffix:
// a compaction's new log, a summary.json replacing a hard-linked one, and
// a settings.json being written.
var sessionTemps = []string{"." + LogFile + ".compact-", "." + SummaryFile + "-", "." + SettingsFile + "-"}

// isSessionTemp reports whether name, in a session directory, is one of
// the store's temporary files (sessionTemps).
func isSessionTemp(name string) bool {
	for _, prefix := range sessionTemps {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			if suffix, ok := strings.CutSuffix(rest, tmpSuffix); ok && isSuffix(suffix) {
				return true
			}
		}
	}
	return false
}
