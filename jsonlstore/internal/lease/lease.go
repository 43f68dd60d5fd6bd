package lease

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/sessionstore/sessionstore/fslease"
)

// Leaser is how the store takes leases. The real one is FS, fslease on
// the session directories; the power-loss tests, whose files live in a
// simulated file system, use an in-memory one whose lease records do not
// survive a simulated crash — the worst case, in which only the
// generations in the log keep new generations higher.
type Leaser interface {
	Acquire(ctx context.Context, dir string, try bool, opts fslease.Options) (Handle, error)
	Inspect(ctx context.Context, dir string) (fslease.Status, error)
	// TryLock takes an exclusive lock on the existing file at path (the
	// catalog's lock) without waiting: ErrLocked when someone has it.
	TryLock(path string) (unlock func(), err error)
}

// ErrLocked reports a lock that someone else holds.
var ErrLocked = errors.New("jsonlstore: locked")

// Handle is what the store uses of a held lease.
type Handle interface {
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

// FS is the real Leaser: fslease on the session directories.
type FS struct{}

// Acquire takes the lease of dir: at once or not at all when try is set,
// else waiting while ctx allows.
func (FS) Acquire(ctx context.Context, dir string, try bool, opts fslease.Options) (Handle, error) {
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

// Inspect reads the lease of dir as a reader does.
func (FS) Inspect(ctx context.Context, dir string) (fslease.Status, error) {
	return fslease.Inspect(ctx, dir)
}

// TryLock flocks the file at path, which the store made (with its
// owner's ownership): opened without following a link or creating it.
func (FS) TryLock(path string) (func(), error) {
	fl := flock.New(path, flock.SetFlag(os.O_RDWR|syscall.O_NOFOLLOW))
	ok, err := fl.TryLock()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrLocked
	}
	return func() { _ = fl.Close() }, nil // closing the descriptor drops the lock
}

// View is the Leaser of a read-only view of a retired session: it reads,
// and nobody may take a lease in it.
type View struct{}

var errView = errors.New("jsonlstore: a retired session's view is read-only")

// Acquire refuses: a view is read-only.
func (View) Acquire(context.Context, string, bool, fslease.Options) (Handle, error) {
	return nil, errView
}

// Inspect reports every lease free.
func (View) Inspect(context.Context, string) (fslease.Status, error) {
	return fslease.Status{State: fslease.Free}, nil
}

// TryLock refuses: a view is read-only.
func (View) TryLock(string) (func(), error) { return nil, errView }

// lockTries is how often TryLockFile tries a lock before calling it held:
// a reader's lease probe holds a shared lock for a moment
// (fslease.TryAcquire waits for it the same way).
const lockTries = 10

// TryLockFile takes the exclusive lock on the existing file at path with
// l, trying lockTries times 2 ms apart; held reports that someone else
// has it.
func TryLockFile(l Leaser, path string) (unlock func(), held bool, err error) {
	for try := 0; ; try++ {
		unlock, err := l.TryLock(path)
		switch {
		case err == nil:
			return unlock, false, nil
		case !errors.Is(err, ErrLocked):
			return nil, false, err
		case try+1 == lockTries:
			return nil, true, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}
