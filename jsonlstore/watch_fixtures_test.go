package jsonlstore

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// fakeSource is an eventSource fed by the test.
type fakeSource struct {
	events chan fsnotify.Event
	errs   chan error

	mu      sync.Mutex
	watched map[string]bool
	refuse  func(path string) error // Add's error for path; nil: accept
	silent  bool                    // every event is lost, barriers included
	closed  bool
	n       int
}

func newFakeSource() *fakeSource {
	return &fakeSource{
		events:  make(chan fsnotify.Event, 1<<12),
		errs:    make(chan error, 16),
		watched: map[string]bool{},
	}
}

func (f *fakeSource) Add(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		if err := f.refuse(path); err != nil {
			return err
		}
	}
	f.watched[path] = true
	return nil
}

func (f *fakeSource) Remove(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.watched, path)
	return nil
}

func (f *fakeSource) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeSource) Errors() <-chan error          { return f.errs }

func (f *fakeSource) Barrier() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	tok := fmt.Sprintf("/barrier/%d", f.n)
	if !f.silent {
		f.events <- fsnotify.Event{Name: tok, Op: fsnotify.Create}
	}
	return tok, nil
}

func (f *fakeSource) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// emit delivers an event about name, a path relative to the store root.
func (f *fakeSource) emit(name string, op fsnotify.Op) {
	f.mu.Lock()
	silent := f.silent
	f.mu.Unlock()
	if !silent {
		f.events <- fsnotify.Event{Name: simRoot + "/" + name, Op: op}
	}
}

func (f *fakeSource) isWatched(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watched[simRoot+"/"+name]
}

const simRoot = "/sim"

// simStore is a store on a simulated file system whose sessions the test
// writes directly (no writer, no lease): what the watcher sees is exactly
// what the test wrote.
type simStore struct {
	t   *testing.T
	sim *vfs.Sim
	st  *Store
	w   *watcher
	src *fakeSource // nil: no event source

	mu        sync.Mutex
	revs      map[session.SessionID]uint64
	recompute map[session.SessionID][]time.Time
}

// newSimStore makes the store; startWatcher starts its watcher.
func newSimStore(t *testing.T, src *fakeSource) *simStore {
	t.Helper()
	sim := vfs.NewSim()
	return &simStore{
		t: t, sim: sim, src: src,
		st:        newStore(simRoot, nil, sim, noLeases{}, Options{PollInterval: time.Second}),
		revs:      map[session.SessionID]uint64{},
		recompute: map[session.SessionID][]time.Time{},
	}
}

// startWatcher starts the watcher with setup applied and waits for its
// initial scan; the store is closed at the end of the test.
func (ss *simStore) startWatcher(setup func(w *watcher)) {
	ss.t.Helper()
	var src eventSource
	if ss.src != nil {
		src = ss.src
	}
	w := newWatcher(ss.st, src)
	w.onRecompute = func(id session.SessionID) {
		ss.mu.Lock()
		ss.recompute[id] = append(ss.recompute[id], time.Now())
		ss.mu.Unlock()
	}
	if setup != nil {
		setup(w)
	}
	ss.st.mu.Lock()
	ss.st.watch = w
	ss.st.mu.Unlock()
	go w.run()
	<-w.ready
	ss.w = w
	ss.t.Cleanup(func() { ss.st.Close() })
}

// recomputes returns when session id's summary was computed.
func (ss *simStore) recomputes(id session.SessionID) []time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]time.Time(nil), ss.recompute[id]...)
}

func (ss *simStore) resetRecomputes() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	clear(ss.recompute)
}

func (ss *simStore) record(id session.SessionID, rev uint64) []byte {
	snap := sessiontest.Snap(ss.t, sessiontest.New(string(id)))
	snap.Title = fmt.Sprintf("%s rev %d", id, rev)
	payload, err := sessionstore.EncodeSnapshot(id, snap, 0)
	require.NoError(ss.t, err)
	return record.Encode(meta{
		Version: RecordVersion, Schema: 1, Rev: rev, Gen: 1,
		Time: sessiontest.Epoch.Add(time.Duration(rev) * time.Second), Kind: KindFull,
	}, payload)
}

// create publishes session id with revs revisions, as Create does:
// built under a temporary name, then renamed into place.
func (ss *simStore) create(id session.SessionID, revs uint64) {
	ss.t.Helper()
	tmp := tmpDirPrefix + string(id) + "-" + randomSuffix()
	require.NoError(ss.t, ss.sim.Mkdir(tmp, dirPerm))
	var log []byte
	for r := uint64(1); r <= revs; r++ {
		log = append(log, ss.record(id, r)...)
	}
	ss.write(tmp+"/"+LogFile, log, os.O_CREATE|os.O_EXCL)
	require.NoError(ss.t, ss.sim.RenameNoReplace(tmp, sessionDir(id)))
	ss.mu.Lock()
	ss.revs[id] = revs
	ss.mu.Unlock()
}

// appendRev appends the next revision to session id's log and returns it.
func (ss *simStore) appendRev(id session.SessionID) uint64 {
	ss.t.Helper()
	ss.mu.Lock()
	ss.revs[id]++
	rev := ss.revs[id]
	ss.mu.Unlock()
	ss.write(logPath(id), ss.record(id, rev), os.O_APPEND)
	return rev
}

// compact replaces session id's log by rename with one holding only its
// latest revision (what compaction does, minus the archive's content).
func (ss *simStore) compact(id session.SessionID) {
	ss.t.Helper()
	ss.mu.Lock()
	rev := ss.revs[id]
	ss.mu.Unlock()
	require.NoError(ss.t, ss.sim.Mkdir(string(id)+"/"+ArchiveDir, dirPerm))
	ss.write(string(id)+"/.log.new", ss.record(id, rev), os.O_CREATE|os.O_EXCL)
	require.NoError(ss.t, ss.sim.Rename(string(id)+"/.log.new", logPath(id)))
}

// remove deletes session id as a writer does: rename to trash, remove.
func (ss *simStore) remove(id session.SessionID) {
	ss.t.Helper()
	trash := trashPrefix + string(id) + "-" + randomSuffix()
	require.NoError(ss.t, ss.sim.RenameNoReplace(sessionDir(id), trash))
	require.NoError(ss.t, ss.sim.RemoveAll(trash))
	ss.mu.Lock()
	delete(ss.revs, id)
	ss.mu.Unlock()
}

func (ss *simStore) write(name string, b []byte, flag int) {
	ss.t.Helper()
	f, err := ss.sim.OpenFile(name, os.O_WRONLY|flag, filePerm)
	require.NoError(ss.t, err)
	_, err = f.Write(b)
	require.NoError(ss.t, err)
	require.NoError(ss.t, f.Close())
}

// want is the state on disk: each session's latest revision.
func (ss *simStore) want() map[session.SessionID]uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m := make(map[session.SessionID]uint64, len(ss.revs))
	for id, r := range ss.revs {
		m[id] = r
	}
	return m
}

// indexed is the watcher's index: each session's revision.
func indexed(t *testing.T, ix *summary.Index) map[session.SessionID]uint64 {
	t.Helper()
	page, err := ix.Query(summary.Query{Order: summary.OrderIDAsc, Limit: summary.MaxLimit})
	require.NoError(t, err)
	m := make(map[session.SessionID]uint64, len(page.Items))
	for _, s := range page.Items {
		m[s.ID] = s.Revision
	}
	return m
}

// noLeases is a leaser for stores whose sessions have no lease files.
type noLeases struct{}

func (noLeases) acquire(context.Context, string, bool, fslease.Options) (leaseHandle, error) {
	return nil, fslease.ErrHeld
}

func (noLeases) inspect(context.Context, string) (fslease.Status, error) {
	return fslease.Status{State: fslease.Free}, nil
}
