package fslease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// Status is what Inspect found.
type Status struct {
	// State is Free, Held or Stale.
	State State
	// Record is the content of lease.json, or nil if it is missing or
	// unreadable. For a Held lease it is read without the lock, so while a
	// new holder is between its flock and its write it is still the
	// previous owner's record.
	Record *Record
	// RecordErr says why an existing lease.json is unreadable (it wraps
	// ErrCorruptRecord or ErrFutureVersion), or nil.
	RecordErr error
	// ActiveAt is when the holder last showed it was alive: the later of
	// Record.HeartbeatAt and the time of its latest Touch (lease.lock's
	// modification time, counted only when it is after the record's
	// heartbeat and not in the future). For a Free lease it is the
	// record's: a released record is the holder's last word, and a lock
	// file's later time can only come from a copy. Zero without a record.
	ActiveAt time.Time
	// HeartbeatAge is the time since ActiveAt (zero without a record,
	// never negative). For a Held lease whose holder heartbeats, or
	// touches the lease at each write, a growing age means a stopped, hung
	// or idle holder; it does not make the lease any less held.
	HeartbeatAge time.Duration
}

// Inspect reports the state of the lease on dir for readers. It never
// modifies anything: it creates no file and writes nothing.
//
// Liveness is decided by the lock alone. Inspect probes lease.lock with a
// non-blocking shared lock, released at once: if the probe fails, a live
// process holds the lease (Held), even if that process is stopped. If it
// succeeds, nobody does; then the lease is Free when lease.json is missing
// or marked released, and Stale otherwise (the holder died, lease.json is
// unreadable, or dir is a copy of a held directory: the pid in a copied
// record may well still run, but it holds no lock on the copy). A missing
// lease.lock cannot be held, so it counts as a successful probe.
//
// To call a lease Stale, Inspect reads the same unreleased record before
// and after a successful probe: its writer held the lock when it wrote it
// and did not hold it at the probe, without having marked it released, so
// it died. A record that changed meanwhile belongs to a holder that came
// since, and Inspect looks again. Hence a lease being acquired or released
// is never reported Stale, and TryAcquire, which retries for a few
// milliseconds, never fails because of a probe.
//
// Errors: ErrSymlink or ErrNotRegular for a planted lease.lock or
// lease.json; I/O errors (a missing dir is fs.ErrNotExist).
func Inspect(ctx context.Context, dir string) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, fmt.Errorf("fslease: inspect %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return Status{}, fmt.Errorf("fslease: inspect: %w", err)
	}
	if !fi.IsDir() {
		return Status{}, fmt.Errorf("fslease: inspect %s: not a directory", dir)
	}
	st, err := inspect(filepath.Join(dir, LockFile), filepath.Join(dir, RecordFile))
	if err != nil {
		return Status{}, fmt.Errorf("fslease: inspect %s: %w", dir, err)
	}
	return st, nil
}

// inspectAttempts bounds the optimistic rounds of inspect after its first.
// Each retry needs a holder to come and go within microseconds, so the
// bound is reached only under pathological churn; then the record is read
// under the shared lock, which is exact but makes a concurrent TryAcquire
// wait.
const inspectAttempts = 4

func inspect(lockPath, recordPath string) (Status, error) {
	// Each round probes the lock and reads the record after it. Held and
	// Free need one round. Unlocked and not released is Stale only if the
	// same record is read on both sides of a successful probe: the
	// previous round's and this one's.
	var before loaded
	for round := range inspectAttempts + 1 {
		held, lock, err := probe(lockPath, nil)
		if err != nil {
			return Status{}, err
		}
		after, err := loadRecord(recordPath)
		if err != nil {
			return Status{}, err
		}
		switch {
		case held:
			return newStatus(Held, after, lock), nil
		case !after.exists || (after.err == nil && after.rec.Released):
			return newStatus(Free, after, lock), nil
		case round == 0:
			// No record was read before this probe.
		case after.err != nil:
			// Holders only ever rename whole records into place: an
			// unreadable one is damage, not a write in progress.
			return newStatus(Stale, after, lock), nil //nolint:nilerr // the damage is reported in Status.RecordErr; Inspect's error is for failing to look
		case before.exists && before.err == nil && before.rec == after.rec:
			return newStatus(Stale, after, lock), nil
		}
		// The record changed around the probe (a holder came since), or
		// this was the first round.
		before = after
	}
	return inspectLocked(lockPath, recordPath)
}

// inspectLocked is the exact fallback of inspect: it reads the record while
// holding the shared lock, which no holder can take while it writes.
func inspectLocked(lockPath, recordPath string) (Status, error) {
	var ld loaded
	held, lock, err := probe(lockPath, func() (err error) {
		ld, err = loadRecord(recordPath)
		return err
	})
	switch {
	case err != nil:
		return Status{}, err
	case !held && (!ld.exists || (ld.err == nil && ld.rec.Released)):
		return newStatus(Free, ld, lock), nil
	case !held:
		return newStatus(Stale, ld, lock), nil
	}
	if ld, err = loadRecord(recordPath); err != nil {
		return Status{}, err
	}
	return newStatus(Held, ld, lock), nil
}

// newStatus builds a Status from a loaded record and the lock file's
// FileInfo (nil when there is none), whose modification time is the
// holder's latest Touch.
func newStatus(s State, ld loaded, lock fs.FileInfo) Status {
	st := Status{State: s, RecordErr: ld.err}
	if ld.exists && ld.err == nil {
		rec := ld.rec
		st.Record = &rec
		now := time.Now()
		st.ActiveAt = rec.HeartbeatAt
		// A time from another clock (the kernel's, when the lock file was
		// created, or that of a holder with a clock of its own) is ignored
		// when it is in the future.
		if lock != nil && s != Free {
			if t := lock.ModTime().UTC(); t.After(st.ActiveAt) && !t.After(now) {
				st.ActiveAt = t
			}
		}
		st.HeartbeatAge = max(0, now.Sub(st.ActiveAt))
	}
	return st
}

// probe tries a non-blocking shared lock on the lock file, opened without
// O_CREATE, so that a reader never creates it, and reports whether another
// process holds the exclusive lock, with the lock file's FileInfo (nil
// when it is missing). A missing lock file is not held. When the probe
// gets the shared lock it runs whileLocked, if not nil, before releasing
// it (without a lock file, it runs it unguarded).
func probe(path string, whileLocked func() error) (held bool, lock fs.FileInfo, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, run(whileLocked)
	}
	if err == nil {
		err = notRegular(fi, path)
	}
	if err != nil {
		return false, nil, err
	}
	fl := flock.New(path, flock.SetFlag(probeOpenFlags))
	ok, err := fl.TryRLock()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, run(whileLocked) // removed since the lstat
	}
	if err != nil {
		return false, nil, fmt.Errorf("probe %s: %w", path, classifyOpenErr(path, err))
	}
	if !ok {
		return true, fi, nil
	}
	err = run(whileLocked)
	if uerr := fl.Unlock(); err == nil && uerr != nil {
		err = fmt.Errorf("unlock probe %s: %w", path, uerr)
	}
	return false, fi, err
}

// run calls fn if it is not nil.
func run(fn func() error) error {
	if fn == nil {
		return nil
	}
	return fn()
}
