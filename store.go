package sessionstore

import (
	"context"
	"iter"
	"time"

	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// DefaultMaxRecordBytes is the default record cap: the most one record of a
// log takes, and so what a reader allocates for one. It bounds a record,
// not a session: a store that writes deltas keeps large content out of
// line and a long conversation's older messages in pages, so a session
// grows as far as the disk allows, and the cap bounds one message (its
// large content out of line) and the snapshot without its messages. A
// store that writes full records only (the previous format) bounds the
// whole snapshot. What exceeds the cap is refused with ErrTooLarge and
// nothing is written.
const DefaultMaxRecordBytes = 16 << 20

// MaxReadRecordBytes bounds the record cap a reader honours: whatever a
// session records of the caps it was written with, a reader never takes
// more than this for one record.
const MaxReadRecordBytes = 1 << 30

// Record is one revision of a session as stored.
type Record struct {
	ID session.SessionID
	// Revision numbers start at 1 and increase by exactly 1.
	Revision uint64
	// Generation is the lease generation of the holder that wrote it; it
	// never decreases along a session's history.
	Generation uint64
	// Time is when the store wrote it (UTC); never earlier than the
	// previous record's.
	Time time.Time
	// SchemaVersion is the sessnap.SchemaVersion of the writer.
	SchemaVersion int
	// Snapshot is a private copy: mutating it never changes the store.
	Snapshot sessnap.Snapshot
}

// Session restores the record's snapshot.
func (r Record) Session() (*session.Session, error) { return r.Snapshot.Restore() }

// AcquireOptions tune a lease acquisition. The zero value works.
type AcquireOptions struct {
	// Label names the acquirer in the lease identity ("agent-cli", …).
	Label string
	// HeartbeatInterval, when positive, makes the writer heartbeat by
	// itself. Adapters whose leases expire (PostgreSQL) use their own
	// default when it is zero; adapters whose leases rest on a kernel lock
	// need no heartbeat for liveness.
	HeartbeatInterval time.Duration
	// Redactor replaces secrets in what the writer writes (Create's and
	// Fork's first revision, CreateHistory's, every Append), instead of
	// the store's own (its Options' Redactor, redact.Default unless set).
	// nil: the store's. A redact.New(redact.Options{Off: true}) writes
	// content as it comes.
	Redactor *redact.Redactor
}

// RecoveryReport says what acquiring a lease found and repaired.
type RecoveryReport struct {
	// Generation is the new holder's generation.
	Generation uint64 `json:"generation"`
	// Previous is the previous holder's lease: LeaseFree when it released
	// cleanly, LeaseStale when it died holding the lease, LeaseUnknown when
	// the session had no holder before (or its lease record was unreadable
	// and was rebuilt).
	Previous summary.LeaseStatus `json:"previous"`
	// TailOffset and TailBytes locate an uncommitted tail (a torn or
	// unacknowledged last write) that was removed from the log; TailBytes
	// is 0 when there was none. ForensicFile holds the removed bytes.
	TailOffset   int64  `json:"tail_offset"`
	TailBytes    int64  `json:"tail_bytes"`
	ForensicFile string `json:"forensic_file,omitempty"`
	// Swept lists leftover temporary files the holder removed.
	Swept []string `json:"swept,omitempty"`
}

// Repaired reports whether acquisition changed anything on disk besides
// the lease itself.
func (r RecoveryReport) Repaired() bool { return r.TailBytes > 0 || len(r.Swept) > 0 }

// Store is the contract every adapter implements (memstore, jsonlstore,
// pgstore); storetest.Run checks it. All methods are safe for concurrent
// use by many goroutines, and (for adapters that persist) by many
// processes. Every method takes a context first; a done context makes
// blocking calls return its error promptly.
type Store interface {
	// Create creates a session whose revision 1 is snap, and returns the
	// writer that holds its lease. snap.ID names the session (mint one with
	// NewID). Errors: ErrInvalidID, ErrInvalidSnapshot, ErrTooLarge,
	// ErrExists, ErrClosed. Revision 1 is durable when Create returns. On
	// error the session either does not exist or exists whole (an adapter
	// may fail after publishing it, for example when making the
	// publication durable fails); it is never half-created.
	Create(ctx context.Context, snap sessnap.Snapshot, opts AcquireOptions) (Writer, error)

	// Fork creates session newID (minted when empty) whose revision 1 is a
	// copy of revision rev of session from (rev 0: the latest), with its ID
	// replaced and its relationship recording from as the parent (and from's
	// root, or from itself, as the root). It returns the new session's
	// writer. Errors as Create, plus ErrNotFound for from or rev.
	Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts AcquireOptions) (Writer, error)

	// Acquire takes the session's operation lease, waiting while another
	// holder has it, until ctx is done (returning ctx's error). The new
	// generation is greater than every earlier one and than any generation
	// in the session's records. Acquire recovers what a dead holder left
	// (see RecoveryReport) before returning. Errors: ErrNotFound,
	// ErrInvalidID, ErrClosed, a *CorruptionError when recovery meets a
	// corrupt log it must not touch, or when the session's records are
	// gone or unusable (a file store's session whose log is missing, or is
	// not a regular file): then nothing is written and no lease is taken.
	// Adapters may refuse a session they must not write to with errors of
	// their own (jsonlstore.ErrLinkedLog).
	Acquire(ctx context.Context, id session.SessionID, opts AcquireOptions) (Writer, error)

	// TryAcquire is Acquire without waiting: if another holder has the
	// lease it fails at once with a *LeaseHeldError (ErrLeaseHeld) that
	// says who.
	TryAcquire(ctx context.Context, id session.SessionID, opts AcquireOptions) (Writer, error)

	// Load returns the latest revision, without any lease. Its cost does
	// not grow with the length of the history. A reader may observe a
	// revision before it is durable; only the writer's acknowledgment
	// promises durability. Errors: ErrNotFound, ErrInvalidID, ErrClosed,
	// *CorruptionError (also for a session whose records are gone, as for
	// Acquire).
	Load(ctx context.Context, id session.SessionID) (Record, error)

	// LoadRevision returns revision rev (archived ones included). Errors as
	// Load; ErrNotFound for a revision that does not exist.
	LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (Record, error)

	// LoadWith loads revision opts.Revision of session id (the latest for
	// 0) as opts say: without the content kept out of line, for one.
	// Errors as Load's and LoadRevision's.
	LoadWith(ctx context.Context, id session.SessionID, opts LoadOptions) (Record, error)

	// History yields every revision in order, from revision 1 (archived
	// revisions included) to the latest at the time of the call. An error
	// is yielded once, last.
	History(ctx context.Context, id session.SessionID) iter.Seq2[Record, error]

	// ReadBlob returns the content session id keeps out of line for ref
	// (its SHA-256 and size; the field it fills does not matter), checked
	// against both: how content moves between stores with the records that
	// reference it (`sessions migrate`). It takes no lease and modifies
	// nothing. Errors: ErrInvalidID, ErrClosed, ErrNotFound for an unknown
	// session or content the session does not hold, a *CorruptionError for
	// content that is not what ref says (damaged), I/O errors.
	ReadBlob(ctx context.Context, id session.SessionID, ref session.ContentRef) ([]byte, error)

	// List returns one page of summaries matching q, in q's order. Lease
	// status is computed when read. A session that exists but cannot be
	// read (corrupt, its records gone, a file the caller may not read) is
	// never left out silently and never fails the listing: every page
	// reports it in Page.Unreadable, with the reason. Errors:
	// summary.ErrBadCursor, an invalid query, ErrClosed.
	List(ctx context.Context, q summary.Query) (summary.Page, error)

	// IDs returns the ID of every session, in ID order, sessions whose
	// records are damaged included (which List reports apart). It takes no
	// lease and modifies nothing. Errors: ErrClosed, a done context's, I/O
	// errors.
	IDs(ctx context.Context) ([]session.SessionID, error)

	// Search returns the sessions' messages and titles that match q, best
	// first. The answer is as of the call: every session whose latest
	// revision was durable when Search was called is searched at that
	// revision (or a later one), whichever process wrote it and whatever
	// state the store's index is in — a missing, stale or damaged index
	// makes a search slower (it is brought up to date first), never
	// wrong. Errors: ErrBadQuery, ErrClosed, a done context's.
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)

	// Watch returns a channel of level-triggered changes: first the current
	// state of every session, then a Change whenever a session's latest
	// revision changes, its lease changes hands or it is deleted. Changes
	// to one session may be coalesced; each carries that session's latest
	// state, lease status included, so a watcher always converges to the
	// current state. A lease change is an acquisition (LeaseHeld, with the
	// new holder's generation: a takeover too), a clean release
	// (LeaseFree) or a holder that died (LeaseStale: a killed process, an
	// expired lease), seen within a few seconds although a dead holder
	// writes nothing; a heartbeat is not a change (summary.SameLease), and
	// the lease's heartbeat age is as of the change (Lease and List compute
	// it when asked). A session that cannot be read (as for List) is a
	// Change with Unreadable set. The channel is closed when ctx is done or
	// the store is closed.
	Watch(ctx context.Context) (<-chan summary.Change, error)

	// Lease reports the session's lease status for readers: free, held
	// (with the holder's identity and heartbeat age: an append counts as a
	// heartbeat) or stale. It never modifies anything. Errors:
	// ErrNotFound, ErrInvalidID, ErrClosed.
	Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error)

	// DiskUsage reports the space each given session occupies (all
	// sessions, in ID order, when none is given) and their total. It takes
	// no lease and modifies nothing; on a live store the figures are a
	// moment's. Errors: ErrClosed, ErrInvalidID, ErrNotFound for a given
	// ID, I/O errors.
	DiskUsage(ctx context.Context, ids ...session.SessionID) (UsageReport, error)

	// Close releases the store's resources. Writers obtained from it should
	// be released first; afterwards every method returns ErrClosed.
	Close() error
}

// Writer is the holder of one session's lease: the only party that may
// append to or delete the session. A Writer is safe for concurrent use;
// appends are serialized.
type Writer interface {
	// ID returns the session's ID.
	ID() session.SessionID

	// Generation returns this holder's lease generation.
	Generation() uint64

	// Recovery reports what acquiring found and repaired.
	Recovery() RecoveryReport

	// Revision returns the latest revision as this writer knows it.
	Revision() uint64

	// Latest returns the revision this writer holds (Revision), with its
	// content, read from what acquiring it already read where the adapter
	// can: a resume (Resume) reads each byte of the session once. An
	// Append of its snapshot's messages followed by new ones stores what
	// changed (a delta where the adapter writes them), not the session
	// again. Errors as Load's, and the writer's as Append's
	// (ErrLeaseLost, ErrWriterFailed, ErrClosed).
	Latest(ctx context.Context) (Record, error)

	// Append writes snap as revision expected+1 and returns it. The new
	// revision is durable when Append returns nil. Errors: ErrConflict when
	// expected is not the latest revision (nothing written); ErrLeaseLost
	// when the lease was superseded (nothing written; the writer is done);
	// ErrInvalidSnapshot or ErrTooLarge (nothing written; the writer stays
	// usable); ErrSchemaTooNew when the latest record is from a newer
	// schema; ErrWriterFailed for this and every later call once an I/O
	// error has made the outcome uncertain (the next holder recovers);
	// ErrClosed after Release or Delete.
	//
	// Part content at or above the store's blob threshold is kept out of
	// line (stored once per session, however often it is attached); reads
	// give it back in place. A part that holds a session.ContentRef instead
	// of its content (as LoadWith with WithoutContent returns them) keeps
	// it as it is, and must name content the session already holds, with
	// that SHA-256 and size: a reference to anything else (content of
	// another session, content never stored, a wrong size) is refused with
	// ErrInvalidSnapshot and nothing is written, so that no stored record
	// references content the store does not have. Create refuses every
	// such reference the same way: a new session holds no content yet.
	Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error)

	// Heartbeat proves the holder alive and checks that the lease is still
	// its own (ErrLeaseLost otherwise). A successful Append proves it alive
	// as well, at no extra cost to the append, so a holder that appends
	// need not heartbeat to look busy.
	Heartbeat(ctx context.Context) error

	// Delete removes the session and releases the lease. Afterwards the ID
	// is free to be created again.
	Delete(ctx context.Context) error

	// Release gives the lease up cleanly; the next holder sees a clean
	// release. Idempotent; afterwards other methods return ErrClosed.
	Release(ctx context.Context) error
}
