package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
	"github.com/sessionstore/sessionstore/memstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/storetest"
	"github.com/sessionstore/sessionstore/summary"
)

func TestMain(m *testing.M) { leaktest.Main(m) }

// The suite must be able to fail: each broken adapter below is memstore
// with one contract rule broken, and the suite, run against it in a child
// process, must fail and name the checks that catch it. A child process
// is the robust way to watch a test fail: the failures cannot leak into
// this test's result, and a hang is cut off by the child's own timeout.

const brokenEnv = "STORETEST_BROKEN"

// Broken modes.
const (
	intact             = "intact"               // control: no rule broken
	noConflictCheck    = "no-conflict-check"    // Append ignores expected and always appends
	sharedSnapshots    = "shared-snapshots"     // Load returns the same snapshot memory every time
	noGenerationBump   = "no-generation-bump"   // every holder reports generation 1
	watchDropsDeletion = "watch-drops-deletion" // Watch never delivers a deletion
	watchHidesLeases   = "watch-hides-leases"   // Watch's changes carry no lease status
)

func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in a child process")
	}
	tests := []struct {
		mode     string
		wantFail []string // checks that must fail (others may too)
	}{
		{intact, nil},
		{noConflictCheck, []string{"ConcurrentAppendsOneWinnerPerRevision", "StaleExpectedIsErrConflict", "AcquireSeesLatestRevision"}},
		{sharedSnapshots, []string{"LoadedRecordIsCopy"}},
		{noGenerationBump, []string{"GenerationsIncreaseAcrossAcquisitions", "AcquireAfterSupersedeReportsStale"}},
		{watchDropsDeletion, []string{"WatchConvergesAndSeesDeletions"}},
		{watchHidesLeases, []string{"WatchChangesCarryLeaseStatus", "WatchSeesRelease", "WatchSeesTakeover", "WatchSeesHolderDeath"}},
	}
	names := storetest.CheckNames()
	failLine := regexp.MustCompile(`--- FAIL: TestBrokenAdapterHelper/(\S+) `)
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			for _, name := range tt.wantFail {
				require.Contains(t, names, name, "the suite has no check %s", name)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0],
				"-test.run=^TestBrokenAdapterHelper$",
				// The size checks are slow under -race (six children share
				// the machine) and have nothing to do with these faults;
				// memstore's own test runs them.
				"-test.skip=^TestBrokenAdapterHelper$/^(OversizedSnapshotIsErrTooLarge|SessionLargerThanRecordCapAppends|ConversationLargerThanRecordCapAppends)$",
				"-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tt.mode)
			out, err := cmd.CombinedOutput()

			var failed []string
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, m[1])
			}
			if tt.wantFail == nil {
				require.NoError(t, err, "the intact adapter must pass:\n%s", out)
				require.Empty(t, failed)
				return
			}
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the suite passed a broken adapter (err %v):\n%s", err, out)
			for _, name := range tt.wantFail {
				require.Contains(t, failed, name, "output:\n%s", out)
			}
			// The fault is caught by the checks about it, not by the
			// whole suite falling over.
			require.Less(t, len(failed), len(names)/2, "failed: %v", failed)
			t.Logf("%s caught by %v", tt.mode, failed)
		})
	}
}

// TestBrokenAdapterHelper runs the suite against the broken adapter named
// by $STORETEST_BROKEN; it is skipped unless a parent test sets it.
func TestBrokenAdapterHelper(t *testing.T) {
	mode := os.Getenv(brokenEnv)
	if mode == "" {
		t.Skip("run by TestSuiteCatchesBrokenAdapters")
	}
	storetest.Run(t, storetest.Harness{
		New: func(*testing.T) sessionstore.Store {
			return &brokenStore{Store: memstore.New(memstore.Options{}), mode: mode}
		},
		Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			require.NoError(t, s.(*brokenStore).Store.(*memstore.Store).Supersede(t.Context(), id))
		},
		Crash: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
			_, err := s.TryAcquire(t.Context(), id, sessionstore.AcquireOptions{})
			require.NoError(t, err)
			require.NoError(t, s.(*brokenStore).Store.(*memstore.Store).Supersede(t.Context(), id))
		},
	})
}

// brokenStore is a store with one rule broken, by overriding the methods
// the rule lives in.
type brokenStore struct {
	sessionstore.Store
	mode string

	mu    sync.Mutex
	cache map[session.SessionID]sessionstore.Record // sharedSnapshots
}

func (b *brokenStore) wrap(w sessionstore.Writer, err error) (sessionstore.Writer, error) {
	if err != nil {
		return nil, err
	}
	return &brokenWriter{Writer: w, mode: b.mode}, nil
}

func (b *brokenStore) Create(ctx context.Context, snap sessnap.Snapshot, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return b.wrap(b.Store.Create(ctx, snap, opts))
}

func (b *brokenStore) Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return b.wrap(b.Store.Fork(ctx, from, rev, newID, opts))
}

func (b *brokenStore) Acquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return b.wrap(b.Store.Acquire(ctx, id, opts))
}

func (b *brokenStore) TryAcquire(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	return b.wrap(b.Store.TryAcquire(ctx, id, opts))
}

// Load, when sharing snapshots, hands out the same record (and so the same
// slices and maps) while the revision is unchanged, as a store that caches
// decoded snapshots without copying them would.
func (b *brokenStore) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	rec, err := b.Store.Load(ctx, id)
	if err != nil || b.mode != sharedSnapshots {
		return rec, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil {
		b.cache = map[session.SessionID]sessionstore.Record{}
	}
	if cached, ok := b.cache[id]; ok && cached.Revision == rec.Revision {
		return cached, nil
	}
	b.cache[id] = rec
	return rec, nil
}

// Watch, when dropping deletions, filters them out; when hiding leases,
// it strips the lease status from every change.
func (b *brokenStore) Watch(ctx context.Context) (<-chan summary.Change, error) {
	ch, err := b.Store.Watch(ctx)
	if err != nil || (b.mode != watchDropsDeletion && b.mode != watchHidesLeases) {
		return ch, err
	}
	out := make(chan summary.Change)
	go func() {
		defer close(out)
		for c := range ch {
			if c.Deleted && b.mode == watchDropsDeletion {
				continue
			}
			if b.mode == watchHidesLeases {
				c.Summary.Lease = summary.LeaseStatus{}
			}
			select {
			case out <- c:
			case <-ctx.Done():
				for range ch { // drain until the store closes the channel
				}
				return
			}
		}
	}()
	return out, nil
}

type brokenWriter struct {
	sessionstore.Writer
	mode string
}

// Append, without a conflict check, appends whatever expected says.
func (w *brokenWriter) Append(ctx context.Context, expected uint64, snap sessnap.Snapshot) (uint64, error) {
	if w.mode != noConflictCheck {
		return w.Writer.Append(ctx, expected, snap)
	}
	for range 1000 {
		rev, err := w.Writer.Append(ctx, w.Revision(), snap)
		if !errors.Is(err, sessionstore.ErrConflict) {
			return rev, err
		}
	}
	return 0, errors.New("broken adapter: gave up")
}

func (w *brokenWriter) Generation() uint64 {
	if w.mode == noGenerationBump {
		return 1
	}
	return w.Writer.Generation()
}

func (w *brokenWriter) Recovery() sessionstore.RecoveryReport {
	r := w.Writer.Recovery()
	if w.mode == noGenerationBump {
		r.Generation = 1
	}
	return r
}
