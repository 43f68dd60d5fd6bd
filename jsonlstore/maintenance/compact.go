package maintenance

import (
	"context"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// CompactPolicy says which revisions compaction keeps. A revision is kept
// when any rule keeps it; the latest revision is always kept. With no rule
// set, nothing is trimmed.
type CompactPolicy struct {
	// KeepLast keeps the last KeepLast revisions (0: no such rule).
	KeepLast int
	// KeepSince keeps revisions written within this duration of now (0:
	// no such rule).
	KeepSince time.Duration
	// DryRun computes the report without changing anything.
	DryRun bool
}

// CompactReport says what a compaction did (or, for a dry run, would do).
type CompactReport struct {
	ID session.SessionID `json:"id"`
	// Skipped is why the session was not compacted ("" if it was, or
	// would be).
	Skipped string `json:"skipped,omitempty"`
	DryRun  bool   `json:"dry_run,omitempty"`
	// RevisionsTrimmed counts the revisions moved into the archive, from
	// its first to FirstKept-1: those a gap record stands for included
	// (it is archived as they are missing: one record).
	RevisionsTrimmed int64  `json:"revisions_trimmed"`
	FirstKept        uint64 `json:"first_kept"`
	Latest           uint64 `json:"latest"`
	LogBytesBefore   int64  `json:"log_bytes_before"`
	LogBytesAfter    int64  `json:"log_bytes_after"`
	// ArchiveBytes is the new segment's compressed size; Segment its path.
	ArchiveBytes int64  `json:"archive_bytes"`
	Segment      string `json:"segment,omitempty"`
	// Reclaimed lists stale files removed (for a dry run: that would be):
	// segments crashed compactions left unlisted or overlapping the log,
	// temporary files.
	Reclaimed []string `json:"reclaimed,omitempty"`
	// Blobs is what the compaction's blob collection removed: blobs no
	// record references (a compaction that trims collects them).
	Blobs BlobCollection `json:"blobs,omitzero"`
}

// Compactor is implemented by the writers of a jsonlstore.Store: a holder
// can compact its own session without releasing its lease.
type Compactor interface {
	// Compact trims the holder's session by policy, under its lease;
	// appends wait while it runs. An error before the log is replaced
	// leaves the session as it was; an I/O error while it is replaced
	// fails the writer (sessionstore.ErrWriterFailed). A dry run writes
	// nothing.
	Compact(ctx context.Context, p CompactPolicy) (CompactReport, error)
}
