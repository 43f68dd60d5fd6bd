package jsonlstore

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/summary"
)

// leaser is the seam between the store and its leases. The real one is
// fslease on the session directories; the power-loss tests, whose files
// live in a simulated file system, use an in-memory one (leases_sim_test.go)
// whose lease records do not survive a simulated crash — the worst case,
// in which only the generations in the log keep new generations higher.
type leaser interface {
	acquire(ctx context.Context, dir string, try bool, opts fslease.Options) (leaseHandle, error)
	inspect(ctx context.Context, dir string) (fslease.Status, error)
	// tryLock takes an exclusive lock on the existing file at path (the
	// catalog's lock) without waiting: errLocked when someone has it.
	tryLock(path string) (unlock func(), err error)
}

// errLocked reports a lock that someone else holds.
var errLocked = errors.New("jsonlstore: locked")

// leaseHandle is what the store uses of a held lease.
type leaseHandle interface {
	Generation() uint64
	Previous() (fslease.Record, bool)
	PreviousState() fslease.PrevState
	Check() error
	Heartbeat(ctx context.Context) error
	// Touch counts a write made at time at as a heartbeat
	// (fslease.Lease.Touch): at most once a second, one system call,
	// nothing synced.
	Touch(at time.Time) error
	Release(ctx context.Context) error
	// MarkReleased records the lease released while its lock is held
	// (fslease.Lease.MarkReleased): Release then only unlocks.
	MarkReleased(ctx context.Context) error
	// SyncRecord makes the record written in a temporary directory
	// durable in its file (fslease.Lease.SyncRecord), before the creator
	// syncs the directory and publishes it.
	SyncRecord() error
	// Moved tells the lease its directory was renamed to dir while held.
	Moved(dir string) error
}

type fsLeaser struct{}

func (fsLeaser) acquire(ctx context.Context, dir string, try bool, opts fslease.Options) (leaseHandle, error) {
	var l *fslease.Lease
	var err error
	if try {
		l, err = fslease.TryAcquire(ctx, dir, opts)
	} else {
		l, err = fslease.Acquire(ctx, dir, opts)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (fsLeaser) inspect(ctx context.Context, dir string) (fslease.Status, error) {
	return fslease.Inspect(ctx, dir)
}

// tryLock flocks the file at path, which the store made (with its
// owner's ownership): opened without following a link or creating it.
func (fsLeaser) tryLock(path string) (func(), error) {
	fl := flock.New(path, flock.SetFlag(os.O_RDWR|syscall.O_NOFOLLOW))
	ok, err := fl.TryLock()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errLocked
	}
	return func() { _ = fl.Close() }, nil // closing the descriptor drops the lock
}

// leaseStatus converts an fslease status for readers.
func leaseStatus(st fslease.Status, now time.Time) summary.LeaseStatus {
	var out summary.LeaseStatus
	switch st.State {
	case fslease.Free:
		out.State = summary.LeaseFree
	case fslease.Held:
		out.State = summary.LeaseHeld
	case fslease.Stale:
		out.State = summary.LeaseStale
	}
	if r := st.Record; r != nil {
		out.Generation = r.Generation
		out.Holder = holderOf(*r)
		// The holder's last sign of life: a heartbeat, or an append (which
		// touches the lease, see writer.touchLease).
		out.Holder.HeartbeatAt = st.ActiveAt
		if st.State == fslease.Held {
			out.HeartbeatAge = age(now, st.ActiveAt)
		}
	}
	return out
}

func holderOf(r fslease.Record) *summary.Holder {
	return &summary.Holder{
		Host: r.Owner.Host, PID: r.Owner.PID, Label: r.Owner.Label,
		AcquiredAt: r.AcquiredAt, HeartbeatAt: r.HeartbeatAt,
	}
}

// previousStatus describes the previous holder for a RecoveryReport.
func previousStatus(l leaseHandle) summary.LeaseStatus {
	var out summary.LeaseStatus
	rec, ok := l.Previous()
	switch l.PreviousState() {
	case fslease.PrevReleased:
		out.State = summary.LeaseFree
	case fslease.PrevStale:
		out.State = summary.LeaseStale
	default:
		return out
	}
	if ok {
		out.Generation = rec.Generation
		out.Holder = holderOf(rec)
	}
	return out
}

func isHeld(err error) bool { return errors.Is(err, fslease.ErrHeld) }

// age is how long ago t was, never negative.
func age(now, t time.Time) time.Duration {
	if d := now.Sub(t); d > 0 {
		return d
	}
	return 0
}
