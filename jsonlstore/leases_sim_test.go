package jsonlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
)

// simLeaser is an in-memory leaser for stores whose files live in a
// vfs.Sim (or anywhere a test does not want lease files): it keeps, per
// lease directory, whether the lease is held and by whom, the last
// generation and whether its last holder released cleanly — what
// fslease keeps in lease.lock and lease.json — and reports them as
// fslease would (Previous, PreviousState, HeldError, LostError, Status).
//
// A power loss is modeled as the worst case for generations: crash
// returns a fresh simLeaser that remembers nothing (lease.json lost), so
// only the store's MinGeneration, read from the log, keeps new
// generations above the old ones. The handles of the crashed leaser are
// lost (Check fails with fslease.ErrLost).
//
// When fsys is set, the leaser also checks the lease directory the way
// fslease checks its lock file: it must exist to be acquired, and
// fencing fails if the directory at the path is no longer the one the
// lease was taken on (moved away, replaced by a copy). fsys must be the
// undecorated file system (never a vfs.Faulty: the leaser's own look-ups
// are not the store's I/O and must not consume fault rules).
type simLeaser struct {
	fsys vfs.FS // nil: no directory checks
	root string // absolute store root, to turn lease directories into FS names
	now  func() time.Time

	mu      sync.Mutex
	locks   map[string]bool // the files TryLock holds
	dirs    map[string]*simLeaseDir
	handles []*simLease
	pids    int
	crashed bool
}

// simLeaseDir is the lease state of one directory: lease.lock and
// lease.json, in memory.
type simLeaseDir struct {
	holder *simLease      // nil when nobody holds the lease
	rec    fslease.Record // the last record written (valid when hasRec)
	hasRec bool
	// touched is the time of the holder's latest Touch (lease.lock's
	// modification time, for fslease).
	touched time.Time
	wake    chan struct{} // closed when the holder lets go
}

// simLease is a held lease (a leaseHandle).
type simLease struct {
	l         *simLeaser
	gen       uint64
	prev      fslease.Record
	prevState fslease.PrevState

	// Guarded by l.mu.
	dir      string
	ident    vfs.Identity // of the directory when acquired (fsys set)
	rec      fslease.Record
	released bool  // Release was called
	marked   bool  // MarkReleased wrote the released record
	lost     error // set by crash or death: every later Check fails with it
}

var (
	_ leaser      = (*simLeaser)(nil)
	_ leaseHandle = (*simLease)(nil)
)

// newSimLeaser returns an empty leaser. fsys and root may be zero (no
// directory checks).
func newSimLeaser(fsys vfs.FS, root string) *simLeaser {
	return &simLeaser{fsys: fsys, root: root, now: time.Now, dirs: map[string]*simLeaseDir{}, locks: map[string]bool{}}
}

// TryLock is lease.FS.TryLock in memory: the stores of one simLeaser
// exclude each other as processes do.
func (l *simLeaser) TryLock(path string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks[path] {
		return nil, lease.ErrLocked
	}
	l.locks[path] = true
	return func() {
		l.mu.Lock()
		delete(l.locks, path)
		l.mu.Unlock()
	}, nil
}

// crash models a power loss: every handle of l is lost, and the returned
// leaser, for the file system that survived (fsys), knows no lease at all.
func (l *simLeaser) crash(fsys vfs.FS) *simLeaser {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.crashed = true
	for _, h := range l.handles {
		if h.lost == nil {
			h.lost = h.lostErr("power loss", nil)
		}
	}
	for _, d := range l.dirs {
		if d.holder != nil {
			d.holder = nil
			close(d.wake)
		}
	}
	return newSimLeaser(fsys, l.root)
}

// name turns a lease directory (absolute, as the store passes it) into a
// name in fsys.
func (l *simLeaser) name(dir string) (string, error) {
	rel, err := filepath.Rel(l.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("simlease: %s is outside the store root %s", dir, l.root)
	}
	return filepath.ToSlash(rel), nil
}

// dirIdentity returns the identity of lease directory dir, or an error
// matching fs.ErrNotExist when there is no directory there. It is zero
// when the leaser has no fsys.
func (l *simLeaser) dirIdentity(dir string) (vfs.Identity, error) {
	if l.fsys == nil {
		return vfs.Identity{}, nil
	}
	name, err := l.name(dir)
	if err != nil {
		return vfs.Identity{}, err
	}
	fi, err := l.fsys.Lstat(name)
	if err != nil {
		return vfs.Identity{}, err
	}
	if !fi.IsDir() {
		return vfs.Identity{}, &fs.PathError{Op: "lstat", Path: name, Err: errors.New("not a directory")}
	}
	return vfs.IdentityOf(fi), nil
}

func (l *simLeaser) Acquire(ctx context.Context, dir string, try bool, opts fslease.Options) (leaseHandle, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("simlease: acquire %s: %w", dir, err)
		}
		l.mu.Lock()
		if l.crashed {
			l.mu.Unlock()
			return nil, fmt.Errorf("simlease: acquire %s: leaser crashed", dir)
		}
		ident, err := l.dirIdentity(dir)
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("simlease: acquire %s: %w", dir, err)
		}
		d := l.dirs[dir]
		if d == nil {
			d = &simLeaseDir{}
			l.dirs[dir] = d
		}
		if d.holder == nil {
			h, err := l.takeLocked(dir, d, ident, opts)
			l.mu.Unlock()
			return h, err
		}
		if try {
			he := &fslease.HeldError{Dir: dir}
			if d.hasRec {
				rec := d.rec
				he.Holder = &rec
			}
			l.mu.Unlock()
			return nil, he
		}
		wake := d.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}
}

// takeLocked makes a new holder of the free lease d, as fslease's
// takeOver does.
func (l *simLeaser) takeLocked(dir string, d *simLeaseDir, ident vfs.Identity, opts fslease.Options) (*simLease, error) {
	h := &simLease{l: l, dir: dir, ident: ident}
	var floor uint64
	switch {
	case !d.hasRec:
		h.prevState = fslease.PrevNone
	case d.rec.Released:
		h.prevState, h.prev, floor = fslease.PrevReleased, d.rec, d.rec.Generation
	default:
		h.prevState, h.prev, floor = fslease.PrevStale, d.rec, d.rec.Generation
	}
	base := max(floor, opts.MinGeneration)
	if base >= fslease.MaxGeneration {
		return nil, fmt.Errorf("simlease: acquire %s: %w: previous generation %d, minimum %d", dir, fslease.ErrOverflow, floor, opts.MinGeneration)
	}
	h.gen = base + 1
	now := l.now
	if opts.Now != nil {
		now = opts.Now
	}
	at := now().Round(0).UTC()
	l.pids++
	h.rec = fslease.Record{
		Version:    fslease.RecordVersion,
		Generation: h.gen,
		Owner: fslease.Identity{
			Host: "sim", PID: l.pids, Nonce: fmt.Sprintf("sim-%d-%d", l.pids, h.gen), Label: opts.Label,
		},
		AcquiredAt:  at,
		HeartbeatAt: at,
	}
	d.holder, d.rec, d.hasRec = h, h.rec, true
	d.wake = make(chan struct{})
	l.handles = append(l.handles, h)
	return h, nil
}

func (l *simLeaser) Inspect(ctx context.Context, dir string) (fslease.Status, error) {
	if err := ctx.Err(); err != nil {
		return fslease.Status{}, fmt.Errorf("simlease: inspect %s: %w", dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.dirIdentity(dir); err != nil {
		return fslease.Status{}, fmt.Errorf("simlease: inspect: %w", err)
	}
	d := l.dirs[dir]
	if d == nil || !d.hasRec {
		return fslease.Status{State: fslease.Free}, nil
	}
	rec := d.rec
	st := fslease.Status{Record: &rec}
	switch {
	case d.holder != nil:
		st.State = fslease.Held
	case rec.Released:
		st.State = fslease.Free
	default:
		st.State = fslease.Stale
	}
	st.ActiveAt = rec.HeartbeatAt
	if d.touched.After(st.ActiveAt) {
		st.ActiveAt = d.touched
	}
	if d := l.now().Sub(st.ActiveAt); d > 0 {
		st.HeartbeatAge = d
	}
	return st, nil
}

// die models the death of h's process: the lock goes away with it, and
// the record says it never released (the next holder sees PrevStale).
func (h *simLease) die() {
	l := h.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.lost == nil {
		h.lost = h.lostErr("holder died", nil)
	}
	if d := l.dirs[h.dir]; d != nil && d.holder == h {
		d.holder = nil
		close(d.wake)
	}
}

func (h *simLease) lostErr(reason string, err error) error {
	return &fslease.LostError{Dir: h.dir, Generation: h.gen, Reason: reason, Err: err}
}

func (h *simLease) Generation() uint64 { return h.gen }

func (h *simLease) Previous() (fslease.Record, bool) {
	return h.prev, h.prevState == fslease.PrevReleased || h.prevState == fslease.PrevStale
}

func (h *simLease) PreviousState() fslease.PrevState { return h.prevState }

func (h *simLease) Check() error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	return h.checkLocked()
}

// checkLocked is the fencing check of fslease: not released, not lost,
// still the holder of the directory at its path.
func (h *simLease) checkLocked() error {
	switch {
	case h.released, h.marked:
		return h.lostErr("released", fslease.ErrReleased)
	case h.lost != nil:
		return h.lost
	}
	d := h.l.dirs[h.dir]
	if d == nil || d.holder != h {
		return h.lostErr("lease taken over", nil)
	}
	ident, err := h.l.dirIdentity(h.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return h.lostErr("lease directory removed or moved", err)
	case err != nil:
		return fmt.Errorf("simlease: check %s: %w", h.dir, err)
	case ident != h.ident:
		return h.lostErr("lease directory replaced", nil)
	}
	return nil
}

func (h *simLease) Heartbeat(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("simlease: heartbeat %s: %w", h.dir, err)
	}
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if err := h.checkLocked(); err != nil {
		return err
	}
	h.rec.HeartbeatAt = h.l.now().Round(0).UTC()
	h.l.dirs[h.dir].rec = h.rec
	return nil
}

// Touch records a sign of life beside the record, as fslease's Touch
// does on lease.lock: at most once per fslease.TouchInterval.
func (h *simLease) Touch(at time.Time) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	d := h.l.dirs[h.dir]
	now := at.Round(0).UTC()
	last := h.rec.HeartbeatAt
	if d != nil && d.touched.After(last) {
		last = d.touched
	}
	if since := now.Sub(last); since >= 0 && since < fslease.TouchInterval && !h.released {
		return nil
	}
	if err := h.checkLocked(); err != nil {
		return err
	}
	d.touched = now
	return nil
}

// Release marks the record released and lets go of the lock, as fslease
// does: a lost lease is let go of without writing (the next holder sees
// PrevStale), and so is one released with a done context.
func (h *simLease) Release(ctx context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if h.released {
		return nil
	}
	var err error
	if !h.marked {
		err = h.checkLocked()
	}
	h.released = true
	d := h.l.dirs[h.dir]
	if err == nil && !h.marked {
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("simlease: release %s: %w", h.dir, cerr)
		} else {
			h.rec.Released = true
			h.rec.HeartbeatAt = h.l.now().Round(0).UTC()
			d.rec = h.rec
		}
	}
	if d != nil && d.holder == h {
		d.holder = nil
		close(d.wake)
	}
	return err
}

// SyncRecord does nothing: the records of a simLeaser are in memory
// until a crash, which loses them all (crash).
func (h *simLease) SyncRecord() error { return nil }

// MarkReleased writes the released record and keeps the lock, as
// fslease does: Release then only lets go of the lock.
func (h *simLease) MarkReleased(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("simlease: release %s: %w", h.dir, err)
	}
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if err := h.checkLocked(); err != nil {
		return err
	}
	h.rec.Released = true
	h.rec.HeartbeatAt = h.l.now().Round(0).UTC()
	h.l.dirs[h.dir].rec = h.rec
	h.marked = true
	return nil
}

// Moved follows a rename of the held lease's directory: the lock and the
// record move with it (replacing whatever state the new path had, as the
// rename replaced the directory), provided the directory now at dir is the
// one the lease was taken on.
func (h *simLease) Moved(dir string) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if err := h.checkMovedLocked(dir); err != nil {
		return err
	}
	d := h.l.dirs[h.dir]
	delete(h.l.dirs, h.dir)
	h.l.dirs[dir] = d
	h.dir = dir
	return nil
}

func (h *simLease) checkMovedLocked(dir string) error {
	switch {
	case h.released:
		return h.lostErr("released", fslease.ErrReleased)
	case h.lost != nil:
		return h.lost
	}
	if d := h.l.dirs[h.dir]; d == nil || d.holder != h {
		return h.lostErr("lease taken over", nil)
	}
	ident, err := h.l.dirIdentity(dir)
	switch {
	case err != nil:
		return h.lostErr("moved lease directory not found", err)
	case ident != h.ident:
		return h.lostErr("directory at the new path is not the lease's", nil)
	}
	return nil
}

// TestSimLeaser checks the in-memory leaser against what the store relies
// on from fslease.
func TestSimLeaser(t *testing.T) {
	ctx := context.Background()
	sim := vfs.NewSim()
	require.NoError(t, sim.Mkdir("a", 0o700))
	require.NoError(t, sim.Mkdir("b", 0o700))
	const root = "/sim"
	l := newSimLeaser(sim, root)

	h1, err := l.Acquire(ctx, root+"/a", true, fslease.Options{Label: "one"})
	require.NoError(t, err)
	require.Equal(t, uint64(1), h1.Generation())
	require.Equal(t, fslease.PrevNone, h1.PreviousState())
	_, ok := h1.Previous()
	require.False(t, ok)
	require.NoError(t, h1.Check())

	// A second holder: try fails at once, saying who; a blocking acquire
	// waits until the context is done.
	_, err = l.Acquire(ctx, root+"/a", true, fslease.Options{})
	require.ErrorIs(t, err, fslease.ErrHeld)
	require.True(t, isHeld(err))
	var he *fslease.HeldError
	require.ErrorAs(t, err, &he)
	require.Equal(t, "one", he.Holder.Owner.Label)
	st, err := l.Inspect(ctx, root+"/a")
	require.NoError(t, err)
	require.Equal(t, fslease.Held, st.State)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = l.Acquire(short, root+"/a", false, fslease.Options{})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A waiting acquire gets the lease when it is released, with a higher
	// generation and a clean previous owner.
	got := make(chan leaseHandle, 1)
	go func() {
		h, err := l.Acquire(ctx, root+"/a", false, fslease.Options{MinGeneration: 0})
		if err != nil {
			close(got)
			return
		}
		got <- h
	}()
	require.NoError(t, h1.Release(ctx))
	require.NoError(t, h1.Release(ctx), "idempotent")
	require.ErrorIs(t, h1.Check(), fslease.ErrLost)
	require.ErrorIs(t, h1.Check(), fslease.ErrReleased)
	h2, ok := <-got
	require.True(t, ok, "waiting acquire failed")
	require.Equal(t, uint64(2), h2.Generation())
	require.Equal(t, fslease.PrevReleased, h2.PreviousState())
	prev, ok := h2.Previous()
	require.True(t, ok)
	require.Equal(t, uint64(1), prev.Generation)

	// Death: the next holder finds a stale owner; MinGeneration is a floor.
	h2.(*simLease).die()
	require.ErrorIs(t, h2.Check(), fslease.ErrLost)
	st, err = l.Inspect(ctx, root+"/a")
	require.NoError(t, err)
	require.Equal(t, fslease.Stale, st.State)
	h3, err := l.Acquire(ctx, root+"/a", true, fslease.Options{MinGeneration: 10})
	require.NoError(t, err)
	require.Equal(t, uint64(11), h3.Generation())
	require.Equal(t, fslease.PrevStale, h3.PreviousState())

	// Fencing follows the directory: a rename without Moved loses the
	// lease, Moved to the directory's new path keeps it, and a directory
	// that is not the lease's is refused.
	require.NoError(t, sim.Rename("a", "c"))
	require.ErrorIs(t, h3.Check(), fslease.ErrLost)
	require.ErrorIs(t, h3.Moved(root+"/b"), fslease.ErrLost)
	require.NoError(t, h3.Moved(root+"/c"))
	require.NoError(t, h3.Check())
	require.NoError(t, h3.Heartbeat(ctx))
	_, err = l.Acquire(ctx, root+"/c", true, fslease.Options{})
	require.ErrorIs(t, err, fslease.ErrHeld)
	_, err = l.Acquire(ctx, root+"/a", true, fslease.Options{})
	require.ErrorIs(t, err, fs.ErrNotExist, "no directory, no lease")

	// A crash forgets every generation: only MinGeneration keeps them up.
	l2 := l.crash(sim)
	require.ErrorIs(t, h3.Check(), fslease.ErrLost)
	require.Error(t, h3.Release(ctx), "a lost lease is let go of without writing")
	h4, err := l2.Acquire(ctx, root+"/c", true, fslease.Options{MinGeneration: 11})
	require.NoError(t, err)
	require.Equal(t, uint64(12), h4.Generation())
	require.Equal(t, fslease.PrevNone, h4.PreviousState())
	_, err = l.Acquire(ctx, root+"/b", true, fslease.Options{})
	require.Error(t, err, "a crashed leaser is dead")

	_, err = l2.Acquire(ctx, root+"/b", true, fslease.Options{MinGeneration: fslease.MaxGeneration})
	require.ErrorIs(t, err, fslease.ErrOverflow)
	require.NoError(t, h4.Release(ctx))
	st, err = l2.Inspect(ctx, root+"/c")
	require.NoError(t, err)
	require.Equal(t, fslease.Free, st.State)
	require.Equal(t, uint64(12), st.Record.Generation)
}
