package fslease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
)

// File names inside a lease directory.
const (
	// LockFile is the flock target. It is created on first Acquire and
	// never unlinked.
	LockFile = "lease.lock"
	// RecordFile holds the lease record (see Record), replaced atomically.
	RecordFile = "lease.json"
)

// MaxLabelLen is the longest Options.Label accepted, in bytes.
const MaxLabelLen = 256

// Options configure Acquire and TryAcquire. The zero value works.
type Options struct {
	// Label is stored in the owner identity for people (e.g. "agent-cli").
	// At most MaxLabelLen bytes of valid UTF-8.
	Label string

	// MinGeneration is a floor: the new generation is greater than both it
	// and the generation in lease.json. When lease.json is lost or
	// unreadable this floor is all that keeps generations increasing, so a
	// store passes the highest generation found in its own records.
	MinGeneration uint64

	// HeartbeatInterval, when positive, starts a goroutine that calls
	// Heartbeat at this interval until Release. Zero means no goroutine.
	// Its failures are reported by Lease.Err and OnHeartbeatError; it
	// stops by itself once the lease is lost.
	HeartbeatInterval time.Duration

	// OnHeartbeatError, if set, is called on the heartbeat goroutine with
	// each error of a background heartbeat. It must not block for long and
	// must not call Release (Release waits for that goroutine to exit).
	OnHeartbeatError func(error)

	// Now is the clock for the times in the record; nil means time.Now.
	Now func() time.Time

	// DirSynced says that the caller makes the record durable itself
	// before anything may rely on it: dir is being built under a
	// temporary name, and before it publishes it with a rename (then
	// calls Moved) the caller calls Lease.SyncRecord and syncs dir. Until
	// Moved, Acquire and MarkReleased write the record over lease.json in
	// place, neither through a temporary file nor syncing anything:
	// nobody else reads the record of a held lease in a directory nobody
	// sees, a crash leaves the directory unpublished, and the caller's
	// syncs make the record and its entry durable. Release, Heartbeat and
	// any write after Moved are as without it. Never set it for a
	// directory that others can already see: a crash could then lose the
	// record of a lease that was taken.
	DirSynced bool
}

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case len(o.Label) > MaxLabelLen:
		return o, fmt.Errorf("%w: label longer than %d bytes", ErrInvalidOptions, MaxLabelLen)
	case !utf8.ValidString(o.Label):
		return o, fmt.Errorf("%w: label is not valid UTF-8", ErrInvalidOptions)
	case o.HeartbeatInterval < 0:
		return o, fmt.Errorf("%w: negative heartbeat interval %s", ErrInvalidOptions, o.HeartbeatInterval)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Lease is a held operation lease on a directory. Its methods are safe for
// concurrent use. Keep it reachable until Release: the lock lives in its
// open descriptor, which the garbage collector would close.
type Lease struct {
	dir      string
	lockPath string
	gen      uint64
	now      func() time.Time
	onHBErr  func(error)

	// Set by Acquire, read-only afterwards.
	prev      Record
	prevState PrevState
	prevErr   error
	swept     []string
	// dirSynced: Options.DirSynced, until Moved (guarded by mu).
	dirSynced bool

	// mu serialises the fencing check with the write that follows it, so
	// that a heartbeat and a release never interleave, and guards below.
	mu     sync.Mutex
	fl     *flock.Flock
	held   fs.FileInfo // fl's file (heldLock), once a check has read it
	rec    Record
	closed bool
	// marked: MarkReleased wrote the released record; Release only
	// unlocks.
	marked bool
	// touched is the time the last Touch wrote on lease.lock; zero before
	// the first.
	touched time.Time
	// checked is the FileInfo of the lease.json that the last check read
	// and found to be this lease's; nil: read it again. The file is only
	// ever replaced whole (a rename), so an Lstat of the same file with
	// the same size and modification time shows it unchanged.
	checked fs.FileInfo

	errMu sync.Mutex
	hbErr error

	stopOnce sync.Once
	stop     chan struct{} // closed by Release to stop the heartbeat goroutine
	done     chan struct{} // closed when the heartbeat goroutine exits; nil if none
}

// Acquire takes the lease on dir, waiting until it is free or ctx is done.
// dir must exist; lease.lock is created in it if missing.
//
// When Acquire returns, lease.json durably holds a new record whose
// generation is greater than the previous record's and than
// opts.MinGeneration, and PreviousState reports whether the previous owner
// released cleanly, died, or left an unreadable record.
//
// Errors: ctx's error, wrapped (errors.Is(err, context.Canceled) works);
// ErrOverflow; ErrSymlink or ErrNotRegular for a planted lease.lock or
// lease.json (nothing is written through it); ErrInvalidOptions; I/O
// errors. On error nothing is held.
func Acquire(ctx context.Context, dir string, opts Options) (*Lease, error) {
	return acquire(ctx, dir, opts, false)
}

// TryAcquire is Acquire that does not wait for another owner: if the lease
// is held it returns a *HeldError (errors.Is(err, ErrHeld)) carrying the
// holder's record. It retries for about 20ms first, so that an Inspect
// probe, which holds a shared lock for a moment, never makes it fail.
func TryAcquire(ctx context.Context, dir string, opts Options) (*Lease, error) {
	return acquire(ctx, dir, opts, true)
}

func acquire(ctx context.Context, dir string, opts Options, try bool) (*Lease, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fslease: acquire %s: %w", dir, err)
	}
	lockPath := filepath.Join(dir, LockFile)
	fl, err := waitLock(ctx, lockPath, try)
	if err != nil {
		return nil, fmt.Errorf("fslease: acquire %s: %w", dir, err)
	}
	if fl == nil {
		he := &HeldError{Dir: dir}
		if ld, err := loadRecord(filepath.Join(dir, RecordFile)); err == nil && ld.exists && ld.err == nil {
			he.Holder = &ld.rec
		}
		return nil, he
	}
	l, err := takeOver(dir, lockPath, fl, o)
	if err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("fslease: acquire %s: %w", dir, err)
	}
	if o.HeartbeatInterval > 0 {
		l.done = make(chan struct{})
		go l.heartbeatLoop(o.HeartbeatInterval) //nolint:gosec // G118: heartbeats outlive Acquire's ctx by design, until Release closes l.stop
	}
	return l, nil
}

// takeOver runs with the exclusive lock held: it reads the previous record,
// sweeps leftover temporary files, and durably writes the new record.
func takeOver(dir, lockPath string, fl *flock.Flock, o Options) (*Lease, error) {
	if err := inheritLockOwner(lockPath, fl); err != nil {
		return nil, err
	}
	ld, err := loadRecord(filepath.Join(dir, RecordFile))
	if err != nil {
		return nil, err
	}
	l := &Lease{
		dir:       dir,
		lockPath:  lockPath,
		now:       o.Now,
		onHBErr:   o.OnHeartbeatError,
		fl:        fl,
		stop:      make(chan struct{}),
		dirSynced: o.DirSynced,
	}
	switch {
	case !ld.exists:
		l.prevState = PrevNone
	case ld.err != nil:
		l.prevState, l.prevErr = PrevUnreadable, ld.err
	case ld.rec.Released:
		l.prevState, l.prev = PrevReleased, ld.rec
	default:
		l.prevState, l.prev = PrevStale, ld.rec
	}
	base := max(ld.floor, o.MinGeneration)
	if base >= MaxGeneration {
		return nil, fmt.Errorf("%w: previous generation %d, minimum %d, maximum %d",
			ErrOverflow, ld.floor, o.MinGeneration, uint64(MaxGeneration))
	}
	l.gen = base + 1
	if l.swept, err = sweepTemps(dir); err != nil {
		return nil, err
	}
	now := l.nowUTC()
	l.rec = Record{
		Version:     RecordVersion,
		Generation:  l.gen,
		Owner:       newIdentity(o.Label),
		AcquiredAt:  now,
		HeartbeatAt: now,
	}
	if err := l.writeRecordLocked(l.rec); err != nil {
		return nil, err
	}
	// The lock file's time is the holder's latest Touch; set it from this
	// lease's clock now, so that neither the time the file was created
	// (the kernel's clock) nor a previous holder's touch is mistaken for
	// this holder's. Best effort: Inspect ignores a time in the future.
	_ = setModTime(lockPath, now)
	return l, nil
}

// nowUTC reads the lease's clock, in UTC and without a monotonic reading,
// so that Record() equals what a reader parses from lease.json.
func (l *Lease) nowUTC() time.Time { return l.now().Round(0).UTC() }

// Dir returns the lease directory.
func (l *Lease) Dir() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dir
}

// Moved tells a held Lease that its directory was renamed to dir (for
// example a directory built under a temporary name and then published):
// the lock and the record moved with it, so the lease is still held, but
// fencing must now check the new path. Moved verifies that dir holds this
// Lease's lock and record; if not, it returns a *LostError and keeps the
// old path.
func (l *Lease) Moved(dir string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldDir, oldLock := l.dir, l.lockPath
	l.dir, l.lockPath = dir, filepath.Join(dir, LockFile)
	if err := l.verifyLocked(); err != nil {
		l.dir, l.lockPath = oldDir, oldLock
		return err
	}
	// The directory is published: what is written from now on is synced
	// here.
	l.dirSynced = false
	return nil
}

// Generation returns the generation this Lease acquired.
func (l *Lease) Generation() uint64 { return l.gen }

// Record returns the record this holder last wrote to lease.json.
func (l *Lease) Record() Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec
}

// Previous returns the record lease.json held before this acquisition. ok
// is false when there was none or it was unreadable (PrevNone,
// PrevUnreadable).
func (l *Lease) Previous() (rec Record, ok bool) {
	return l.prev, l.prevState == PrevReleased || l.prevState == PrevStale
}

// PreviousState says whether the previous owner released cleanly, died, or
// left an unreadable record.
func (l *Lease) PreviousState() PrevState { return l.prevState }

// PreviousErr says why the previous record was unreadable (it wraps
// ErrCorruptRecord or ErrFutureVersion), or nil.
func (l *Lease) PreviousErr() error { return l.prevErr }

// Swept returns the names of leftover temporary files that Acquire removed
// from the directory (left by holders killed while writing lease.json).
func (l *Lease) Swept() []string { return append([]string(nil), l.swept...) }

// Check is the fencing check: it returns nil if this Lease still owns the
// lease, or a *LostError (errors.Is(err, ErrLost)) if it was released, if
// the lock file at the path is no longer the one this Lease locked
// (replaced, removed, directory moved), or if lease.json no longer holds
// this Lease's generation and nonce. Other errors are I/O errors that
// prevented the check.
//
// A kernel lock cannot be taken from a live process, so Check guards
// against changes made around the lock: files replaced, directories moved
// or restored from a copy. Call it before each write the lease protects.
func (l *Lease) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkLocked()
}

func (l *Lease) checkLocked() error {
	if l.marked {
		return &LostError{Dir: l.dir, Generation: l.gen, Reason: "released", Err: ErrReleased}
	}
	return l.verifyLocked()
}

// verifyLocked is checkLocked for Moved, which follows the directory of
// a lease that MarkReleased marked too: the lock and the record at the
// path must be this Lease's, the record released only if MarkReleased
// wrote it so.
func (l *Lease) verifyLocked() error {
	lost := func(reason string, err error) error {
		return &LostError{Dir: l.dir, Generation: l.gen, Reason: reason, Err: err}
	}
	if l.closed {
		return lost("released", ErrReleased)
	}
	// The held descriptor's identity is read once (heldLock: it cannot
	// change); each check compares it with what is at the path now.
	if l.held == nil {
		held, err := heldLock(l.fl, l.lockPath)
		if err != nil {
			if errors.Is(err, ErrNotRegular) {
				return lost("lock file replaced", err)
			}
			return fmt.Errorf("fslease: check %s: %w", l.dir, err)
		}
		l.held = held
	}
	same, err := heldIsAtPath(l.held, l.lockPath)
	switch {
	case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotRegular):
		return lost("lock file replaced", err)
	case err != nil:
		return fmt.Errorf("fslease: check %s: %w", l.dir, err)
	case !same:
		return lost("lock file replaced or removed", nil)
	}
	recordPath := filepath.Join(l.dir, RecordFile)
	if l.checked != nil {
		if cur, err := os.Lstat(recordPath); err == nil && cur.Mode().IsRegular() && os.SameFile(cur, l.checked) &&
			cur.Size() == l.checked.Size() && cur.ModTime().Equal(l.checked.ModTime()) {
			return nil
		}
		l.checked = nil
	}
	ld, err := loadRecord(recordPath)
	switch {
	case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotRegular):
		return lost("lease record replaced", err)
	case err != nil:
		return fmt.Errorf("fslease: check %s: %w", l.dir, err)
	case !ld.exists:
		return lost("lease record removed", fs.ErrNotExist)
	case ld.err != nil:
		return lost("lease record unreadable", ld.err)
	case ld.rec.Generation != l.gen || ld.rec.Owner.Nonce != l.rec.Owner.Nonce:
		return lost(fmt.Sprintf("lease record now generation %d, pid %d, nonce %s",
			ld.rec.Generation, ld.rec.Owner.PID, ld.rec.Owner.Nonce), nil)
	case ld.rec.Released && !l.marked:
		return lost("lease record marked released", nil)
	case !ld.rec.Released && l.marked:
		return lost("lease record no longer marked released", nil)
	}
	l.checked = ld.stat
	return nil
}

// Heartbeat checks fencing (see Check) and rewrites lease.json with a new
// HeartbeatAt. The write is atomic but the directory is not synced: a
// heartbeat lost in a crash leaves the previous record of the same
// generation, which is harmless. Heartbeats are for people (Inspect's
// heartbeat age); liveness never depends on them.
func (l *Lease) Heartbeat(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rewriteLocked(ctx, "heartbeat", false, func(rec Record) error {
		return writeRecordFile(l.dir, rec, false)
	})
}

// rewriteLocked writes the holder's record anew, its HeartbeatAt now and,
// with released, Released set, by write, after checking fencing (see
// Check: the record is the holder's to write) and ctx; l.rec is then the
// record written. op names the operation in its errors: the *LostError of
// fencing, ctx's, write's.
func (l *Lease) rewriteLocked(ctx context.Context, op string, released bool, write func(Record) error) error {
	if err := l.checkLocked(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fslease: %s %s: %w", op, l.dir, err)
	}
	rec := l.rec
	rec.HeartbeatAt = l.nowUTC()
	if released {
		rec.Released = true
	}
	if err := write(rec); err != nil {
		return fmt.Errorf("fslease: %s %s: %w", op, l.dir, err)
	}
	l.rec = rec
	return nil
}

// TouchInterval is the least time between two writes of Touch: a holder
// that writes many times a second touches its lock file about once a
// second.
const TouchInterval = time.Second

// Touch tells readers that the holder was at work at time at (the time of
// a write it made, by its clock): it sets the modification time of
// lease.lock to at, which Inspect reads as the holder's latest sign of
// life when it is later than the record's HeartbeatAt (Status.ActiveAt).
// A store calls it after each write it makes under the lease, with the
// time it gave the write, so that a busy holder never looks idle although
// it never heartbeats.
//
// When at is less than TouchInterval after the holder's latest heartbeat
// or touch, Touch returns at once, touching no file and reading no clock;
// otherwise it checks fencing (see Check) and makes one system call. It
// writes no data and syncs nothing: the new time reaches the disk with the
// file system's next commit, and one lost in a crash only makes a dead
// holder look idle for longer. lease.json is left alone, so Touch never
// weakens what Acquire and Release make durable.
//
// Errors: a *LostError when fencing fails (nothing is touched), I/O
// errors (a lock file owned by another user refuses an explicit time).
func (l *Lease) Touch(at time.Time) error {
	at = at.Round(0).UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.rec.HeartbeatAt
	if l.touched.After(last) {
		last = l.touched
	}
	if since := at.Sub(last); since >= 0 && since < TouchInterval && !l.closed {
		return nil
	}
	if err := l.checkLocked(); err != nil {
		return err
	}
	if err := setModTime(l.lockPath, at); err != nil {
		return fmt.Errorf("fslease: touch %s: %w", l.dir, err)
	}
	l.touched = at
	return nil
}

// Release stops the heartbeat goroutine, durably writes the record with
// Released set (so the next holder sees PrevReleased), then unlocks and
// closes the lock file. It always unlocks, even when it returns an error;
// afterwards Check reports ErrLost and ErrReleased.
//
// If the lease was lost, Release does not write (lease.json belongs to
// someone else) and returns the *LostError. If ctx is done before the
// write, Release unlocks without writing, leaving the lease for the next
// holder as stale, and returns ctx's error. After MarkReleased, Release
// writes nothing: it only unlocks. Release is idempotent: calls after the
// first return nil.
func (l *Lease) Release(ctx context.Context) error {
	l.stopHeartbeat()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var errs []error
	// After MarkReleased the released record is written; it is durable (or
	// the caller's sync of the directory made it so).
	if !l.marked {
		// Durable before unlocking: the next holder must not see a stale
		// owner for a clean release.
		if err := l.rewriteLocked(ctx, "release", true, func(rec Record) error {
			return writeRecordFile(l.dir, rec, true)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	l.closed = true
	if err := l.fl.Unlock(); err != nil {
		errs = append(errs, fmt.Errorf("fslease: unlock %s: %w", l.lockPath, err))
	}
	return errors.Join(errs...)
}

// MarkReleased writes the record that Release would write (Released set)
// while keeping the lock: for a holder that has done all its work under
// the lease in a directory built under a temporary name (Options.DirSynced)
// and is about to publish it, so that the directory is published with its
// lease already recorded released and Release, afterwards, only unlocks —
// one record written instead of two. Readers see what they see of any
// release: the lock held until Release, then a free lease whose record is
// released; the next holder sees PrevReleased.
//
// It checks fencing first (see Check). Until Moved with
// Options.DirSynced, nothing is synced (the caller calls SyncRecord and
// syncs the directory before it publishes it); otherwise the record is
// durable when MarkReleased returns. Afterwards Check, Heartbeat and Touch
// report the lease released (ErrLost, ErrReleased), Moved still follows
// the directory (its lock is still held), and Release writes nothing. The
// heartbeat goroutine is stopped in any case; if MarkReleased fails, the
// lease is still held and Release releases it as usual.
func (l *Lease) MarkReleased(ctx context.Context) error {
	l.stopHeartbeat()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.rewriteLocked(ctx, "release", true, l.writeRecordLocked); err != nil {
		return err
	}
	l.marked = true
	l.checked = nil // written in place, perhaps: the next check reads it
	return nil
}

// SyncRecord fsyncs lease.json, for a creator that took the lease with
// Options.DirSynced and is about to sync the directory and publish it:
// the record Acquire or MarkReleased wrote in place is then durable in
// its file (its entry is the directory's sync's). It fails if the file
// cannot be opened or synced; it checks nothing else.
func (l *Lease) SyncRecord() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return syncRecordFile(l.dir)
}

// writeRecordLocked writes rec as the record of Acquire and MarkReleased:
// replaced atomically and durably (dir synced), or, with DirSynced until
// Moved, written in place and left to its creator to sync, with the
// directory, before publishing it (writeRecordInPlace, SyncRecord).
func (l *Lease) writeRecordLocked(rec Record) error {
	if l.dirSynced {
		return writeRecordInPlace(l.dir, rec)
	}
	return writeRecordFile(l.dir, rec, true)
}
