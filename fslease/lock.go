package fslease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// Polling. flock(2) cannot be interrupted by a context, so Acquire polls a
// non-blocking flock with a capped, jittered backoff and watches the
// context between attempts. An attempt is an open, a flock and a close: a
// few microseconds.
const (
	pollMin = 500 * time.Microsecond
	pollMax = 10 * time.Millisecond

	// tryWindow is how long TryAcquire keeps trying before it reports
	// ErrHeld. Inspect's probe holds a shared lock for a moment; without
	// the retries it could make TryAcquire fail on a free lease.
	tryWindow  = 20 * time.Millisecond
	tryPollMax = 2 * time.Millisecond

	// replacedRetries bounds how often one attempt re-locks when the lock
	// file keeps being replaced under it.
	replacedRetries = 16
)

// newLockHandle returns a flock handle on path that opens it with O_CREATE,
// O_RDWR, O_NOFOLLOW and O_CLOEXEC (added by os.OpenFile), mode 0600.
// Every handle has its own open file description, so two handles in one
// process exclude each other exactly as two processes do.
func newLockHandle(path string) *flock.Flock {
	return flock.New(path, flock.SetFlag(lockOpenFlags), flock.SetPermissions(0o600))
}

// tryLock makes one non-blocking attempt at the exclusive lock on path. It
// returns the locked handle, or nil if another owner holds the lock.
//
// flock locks the file the descriptor was opened on, not the name: if the
// file at path was replaced between our open and our flock, we would hold
// a lock nobody else looks at. So after flock succeeds, tryLock checks that
// the descriptor and the path still name the same file, and starts over if
// not.
func tryLock(path string) (*flock.Flock, error) {
	for range replacedRetries {
		fl := newLockHandle(path)
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, classifyOpenErr(path, err))
		}
		if !ok {
			return nil, nil
		}
		same, err := lockIsAtPath(fl, path)
		if err != nil {
			_ = fl.Unlock()
			return nil, err
		}
		if same {
			return fl, nil
		}
		_ = fl.Unlock() // replaced meanwhile: the lock is on an orphan
	}
	return nil, nil // the file keeps changing: report busy, let the caller retry
}

// lockIsAtPath reports whether the locked handle fl still refers to the
// file at path: fstat of the descriptor against lstat of the path. A
// missing path is false; a symlink or non-regular file is an error. fl must
// be locked (otherwise flock's Stat falls back to stat(path)).
func lockIsAtPath(fl *flock.Flock, path string) (bool, error) {
	held, err := heldLock(fl, path)
	if err != nil {
		return false, err
	}
	return heldIsAtPath(held, path)
}

// heldLock returns the FileInfo of the locked handle fl of path (fstat of
// the descriptor), which must be a regular file. What it identifies never
// changes while fl is open: a descriptor refers to one inode for its life,
// and an inode's type is fixed.
func heldLock(fl *flock.Flock, path string) (fs.FileInfo, error) {
	held, err := fl.Stat()
	return regular(held, err, "stat lock descriptor", path)
}

// heldIsAtPath is lockIsAtPath given the held handle's FileInfo (heldLock).
func heldIsAtPath(held fs.FileInfo, path string) (bool, error) {
	cur, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lstat %s: %w", path, err)
	}
	if cur.Mode()&fs.ModeSymlink != 0 {
		return false, fmt.Errorf("%w: %s", ErrSymlink, path)
	}
	return os.SameFile(held, cur), nil
}

// waitLock polls tryLock until it gets the lock, ctx is done, or (when try
// is set) tryWindow has passed. It returns nil, nil when try gives up.
func waitLock(ctx context.Context, path string, try bool) (*flock.Flock, error) {
	delay, maxDelay := pollMin, pollMax
	var giveUp time.Time
	if try {
		giveUp = time.Now().Add(tryWindow)
		maxDelay = tryPollMax
	}
	for {
		fl, err := tryLock(path)
		if err != nil || fl != nil {
			return fl, err
		}
		if try && !time.Now().Before(giveUp) {
			return nil, nil
		}
		// Jitter so that waiters do not poll in lockstep.
		t := time.NewTimer(delay/2 + rand.N(delay)) //nolint:gosec // G404: poll jitter, not a secret
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
	}
}
