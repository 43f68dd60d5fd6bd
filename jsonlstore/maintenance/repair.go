package maintenance

import (
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// RepairOptions tune Repair. The zero value takes the lease without
// waiting and changes nothing but what normal recovery changes.
type RepairOptions struct {
	// TruncateAtCorruption cuts the log at its first bad record, keeping
	// every removed byte in a forensic file. Without it Repair only
	// reports corruption.
	TruncateAtCorruption bool
	// Salvage rewrites the log keeping every revision that can still be
	// read: exact copies of lines are dropped, damaged records and the
	// deltas that cannot be rebuilt without them are set aside into
	// forensic/, and the revisions they held are recorded in the log as
	// gap records (FORMAT.md, "Repaired logs"). Revision numbers never change. It takes
	// precedence over TruncateAtCorruption.
	Salvage bool
	// Wait is how long to wait for a held lease; 0 fails at once with a
	// *sessionstore.LeaseHeldError.
	Wait time.Duration
	// Label names the repair in the lease identity (default
	// "sessions-repair").
	Label string
}

// RepairReport says what Repair found and did.
type RepairReport struct {
	ID session.SessionID `json:"id"`
	// Generation is the lease generation the repair held.
	Generation uint64 `json:"generation"`
	// Recovery is what taking the lease found and did: the previous
	// holder's status, an uncommitted tail removed, leftover files swept
	// in the session directory.
	Recovery sessionstore.RecoveryReport `json:"recovery"`
	// Found is the first corruption in the log, nil when there was none.
	Found *sessionstore.Finding `json:"found,omitempty"`
	// Cut is true when the log was cut at CutOffset (TruncateAtCorruption;
	// a lying summary.json alone is moved aside, and nothing is cut).
	Cut       bool  `json:"cut"`
	CutOffset int64 `json:"cut_offset,omitempty"`
	// BytesRemoved counts every byte removed from the log, by the cut and
	// by normal recovery; ForensicFiles hold all of them (paths relative
	// to the store root), and a summary.json moved out of the way.
	BytesRemoved  int64    `json:"bytes_removed"`
	ForensicFiles []string `json:"forensic_files,omitempty"`
	// Salvaged says what a salvage kept and set aside (nil when none ran
	// or nothing needed setting aside).
	Salvaged *SalvageReport `json:"salvaged,omitempty"`
	// Records and Revision describe the log as the repair left it: its
	// number of records and latest revision (records from 1 to Revision
	// are kept).
	Records  int    `json:"records"`
	Revision uint64 `json:"revision"`
	// Swept lists leftover temporary and trash directories at the store
	// root that Repair removed.
	Swept []string `json:"swept,omitempty"`
	// Blobs is what the repair's blob collection removed: blobs no record
	// references, once the log is sound.
	Blobs BlobCollection `json:"blobs,omitzero"`
	// Archives lists the archive segments whose manifest entries an older
	// release's compaction ended too early, and that the repair corrected
	// (the segment itself proves its true end).
	Archives []ArchiveFix `json:"archives,omitempty"`
}

// SalvageReport says what a salvage kept and set aside.
type SalvageReport struct {
	// Kept is the number of records kept, byte for byte.
	Kept int `json:"kept"`
	// DuplicatesRemoved counts exact copies of kept lines that were
	// dropped (their bytes are in forensic/ too).
	DuplicatesRemoved int `json:"duplicates_removed"`
	// Gaps are the revisions set aside, each recorded in the log as a gap
	// record; Restored is the revision that restores the last readable
	// one when the log's last revisions were lost (0: none was needed).
	Gaps     []SalvagedGap `json:"gaps,omitempty"`
	Restored uint64        `json:"restored,omitempty"`
}

// SalvagedGap is a run of revisions a salvage set aside.
type SalvagedGap struct {
	First  uint64 `json:"first"`
	Last   uint64 `json:"last"`
	Reason string `json:"reason"`
	// Forensic holds their bytes, relative to the store root ("" when the
	// log held none of them).
	Forensic string `json:"forensic,omitempty"`
}

// ArchiveFix is one manifest entry a repair corrected.
type ArchiveFix struct {
	// Old and New are the segment's file names (in archive/) before and
	// after; New holds the same bytes under the name of its true range.
	Old string `json:"old"`
	New string `json:"new"`
	// First and Last are the revisions the segment holds, Listed the last
	// revision the manifest listed.
	First  uint64 `json:"first"`
	Last   uint64 `json:"last"`
	Listed uint64 `json:"listed"`
}
