package jsonlstore

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"

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

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isLeftover reports whether a root entry is a leftover of an interrupted
// creation or deletion.
func isLeftover(name string) bool {
	return strings.HasPrefix(name, tmpDirPrefix) || strings.HasPrefix(name, trashPrefix)
}
