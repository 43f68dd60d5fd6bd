package jsonlstore

import (
	"encoding/json"
	"time"

	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// summaryFile is the content of summary.json: the projection of the log's
// latest record, keyed by the exact log state it was computed from. It is a
// cache: written atomically but not synced after each append, so after a
// crash it may be missing, empty, torn or stale. It is trusted only when
// the log it names is the log on disk (same identity and size) and the
// record at LastOffset still carries Revision; otherwise readers compute
// the summary from the log's tail.
type summaryFile struct {
	Version    int             `json:"v"`
	Log        vfs.Identity    `json:"log"`
	LogSize    int64           `json:"log_size"`
	LastOffset int64           `json:"last_offset"`
	Revision   uint64          `json:"revision"`
	Summary    summary.Summary `json:"summary"`
}

const (
	summaryVersion  = 1
	maxSummaryBytes = 256 << 10
)

func readSummaryFile(fsys vfs.FS, id session.SessionID) (summaryFile, bool) {
	var sf summaryFile
	b, err := vfs.ReadFile(fsys, summaryPath(id), maxSummaryBytes)
	if err != nil || json.Unmarshal(b, &sf) != nil || sf.Version != summaryVersion ||
		sf.Summary.ID != id || sf.Revision == 0 || sf.Summary.Revision != sf.Revision {
		return summaryFile{}, false
	}
	return sf, true
}

func writeSummaryFile(fsys vfs.FS, id session.SessionID, sf summaryFile) error {
	sf.Version = summaryVersion
	sf.Summary.Lease = summary.LeaseStatus{} // computed when read, never cached
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	// Not durable on purpose: summary.json is a cache, and a sync here
	// would double the cost of an append. The suffix keeps temp names
	// unique across concurrent writers of different sessions' stores.
	return vfs.WriteFileAtomic(fsys, sessionDir(id), SummaryFile, b, filePerm, false, "."+randomSuffix())
}

// projectRecord computes a session's summary from a record.
func projectRecord(rec *rawRecord, snap *sessnap.Snapshot, logSize int64) summary.Summary {
	s := summary.Project(snap, rec.Rev, rec.Gen, rec.Time)
	s.Sizes.LogBytes = logSize
	return s
}

// age is how long ago t was, never negative.
func age(now, t time.Time) time.Duration {
	if d := now.Sub(t); d > 0 {
		return d
	}
	return 0
}
