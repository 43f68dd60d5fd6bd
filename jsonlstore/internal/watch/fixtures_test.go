package watch

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// fakeSource is an EventSource fed by the test.
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

// The names of a simulated session's entries, as jsonlstore names them.
const (
	logFile     = "log.jsonl"
	summaryFile = "summary.json"
	forensicDir = "forensic"
	archiveDir  = "archive"
)

// simStore is a store whose sessions the test makes, appends to and
// deletes directly, in memory (fakeDisk): what the watcher sees is exactly
// what the test did.
type simStore struct {
	t    *testing.T
	disk *fakeDisk
	w    *Watcher
	src  *fakeSource // nil: no event source
	poll time.Duration
}

// newSimStore makes the store; startWatcher starts its watcher.
func newSimStore(t *testing.T, src *fakeSource) *simStore {
	t.Helper()
	return &simStore{t: t, disk: newFakeDisk(), src: src, poll: time.Second}
}

// startWatcher starts the watcher with setup applied to its options and
// waits for its initial scan; it is closed at the end of the test.
func (ss *simStore) startWatcher(setup func(o *Options)) {
	ss.t.Helper()
	opts := Options{Dir: simRoot, PollInterval: ss.poll}
	if ss.src != nil {
		opts.Source = ss.src
	}
	if setup != nil {
		setup(&opts)
	}
	w := Start(ss.disk, opts)
	<-w.ready
	ss.w = w
	ss.t.Cleanup(w.Close)
}

// recomputes returns when session id's summary was computed.
func (ss *simStore) recomputes(id session.SessionID) []time.Time { return ss.disk.recomputes(id) }

func (ss *simStore) resetRecomputes() { ss.disk.resetRecomputes() }

// create publishes session id with revs revisions, as Create does: a new
// directory (a new identity) under the name.
func (ss *simStore) create(id session.SessionID, revs uint64) { ss.disk.create(id, revs) }

// appendRev appends the next revision to session id's log and returns it.
func (ss *simStore) appendRev(id session.SessionID) uint64 { return ss.disk.appendRev(id) }

// compact replaces session id's log by rename with a smaller one holding
// the same revision (what compaction does).
func (ss *simStore) compact(id session.SessionID) { ss.disk.compact(id) }

// remove deletes session id.
func (ss *simStore) remove(id session.SessionID) { ss.disk.remove(id) }

// want is the state on disk: each session's latest revision.
func (ss *simStore) want() map[session.SessionID]uint64 { return ss.disk.want() }

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

// fakeDisk is a Disk in memory. A session is a directory identity, a log
// (identity, size, modification time) and a revision; its summary is
// computed from the revision, and every computation is recorded.
type fakeDisk struct {
	mu        sync.Mutex
	sessions  map[session.SessionID]*fakeSession
	ino       uint64
	recompute map[session.SessionID][]time.Time
	inspected map[session.SessionID]int // Lease calls
}

type fakeSession struct {
	dir, log vfs.Identity
	size     int64
	mtime    time.Time
	rev      uint64
	// The lease: its status, and the identity of its record (lease.json),
	// replaced at every write of the record (zero: none yet).
	lease  summary.LeaseStatus
	record vfs.Identity
}

const fakeRecordSize = 100

func newFakeDisk() *fakeDisk {
	return &fakeDisk{
		sessions:  map[session.SessionID]*fakeSession{},
		recompute: map[session.SessionID][]time.Time{},
		inspected: map[session.SessionID]int{},
	}
}

// acquire gives session id's lease to a new holder labelled label, as an
// acquisition does: a new generation and a new record.
func (d *fakeDisk) acquire(id session.SessionID, label string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	now := time.Now().UTC()
	s.lease = summary.LeaseStatus{
		State: summary.LeaseHeld, Generation: s.lease.Generation + 1,
		Holder: &summary.Holder{Host: "box", PID: 42, Label: label, AcquiredAt: now, HeartbeatAt: now},
	}
	s.record = d.newIdentityLocked()
	return s.lease.Generation
}

// release frees session id's lease, as a clean release does: a new record.
func (d *fakeDisk) release(id session.SessionID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	s.lease.State = summary.LeaseFree
	s.lease.Holder.HeartbeatAt = time.Now().UTC()
	s.record = d.newIdentityLocked()
}

// heartbeat rewrites session id's lease record with a new heartbeat time.
func (d *fakeDisk) heartbeat(id session.SessionID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	s.lease.Holder.HeartbeatAt = time.Now().UTC()
	s.record = d.newIdentityLocked()
}

// die makes session id's holder die: its lock goes, its record stays.
func (d *fakeDisk) die(id session.SessionID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sessions[id].lease.State = summary.LeaseStale
}

// inspections returns how often session id's lease was inspected.
func (d *fakeDisk) inspections(id session.SessionID) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inspected[id]
}

func (d *fakeDisk) newIdentityLocked() vfs.Identity {
	d.ino++
	return vfs.Identity{Dev: 1, Ino: d.ino}
}

func (d *fakeDisk) create(id session.SessionID, revs uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sessions[id] = &fakeSession{
		dir: d.newIdentityLocked(), log: d.newIdentityLocked(),
		size: int64(revs) * fakeRecordSize, mtime: time.Now(), rev: revs,
		lease: summary.LeaseStatus{State: summary.LeaseFree},
	}
}

func (d *fakeDisk) appendRev(id session.SessionID) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	s.rev++
	s.size += fakeRecordSize
	s.mtime = time.Now()
	return s.rev
}

func (d *fakeDisk) compact(id session.SessionID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[id]
	s.log, s.size, s.mtime = d.newIdentityLocked(), fakeRecordSize, time.Now()
}

func (d *fakeDisk) remove(id session.SessionID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sessions, id)
}

func (d *fakeDisk) want() map[session.SessionID]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[session.SessionID]uint64, len(d.sessions))
	for id, s := range d.sessions {
		m[id] = s.rev
	}
	return m
}

func (d *fakeDisk) recomputes(id session.SessionID) []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.recompute[id]...)
}

func (d *fakeDisk) resetRecomputes() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.recompute)
}

func (d *fakeDisk) IDs() ([]session.SessionID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]session.SessionID, 0, len(d.sessions))
	for id := range d.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids) // as a directory listing: in name order
	return ids, nil
}

func (d *fakeDisk) lookup(id session.SessionID) (*fakeSession, error) {
	s := d.sessions[id]
	if s == nil {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	return s, nil
}

func (d *fakeDisk) StatDir(id session.SessionID) (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(id)
	if err != nil {
		return nil, fs.ErrNotExist
	}
	return fakeInfo{name: string(id), id: s.dir, dir: true}, nil
}

func (d *fakeDisk) StatLog(id session.SessionID) (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(id)
	if err != nil {
		return nil, err
	}
	return fakeInfo{name: logFile, id: s.log, size: s.size, mtime: s.mtime}, nil
}

func (d *fakeDisk) Summary(_ context.Context, id session.SessionID) (summary.Summary, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recompute[id] = append(d.recompute[id], time.Now())
	s, err := d.lookup(id)
	if err != nil {
		return summary.Summary{}, err
	}
	return summary.Summary{
		ID: id, Title: fmt.Sprintf("%s rev %d", id, s.rev), Revision: s.rev, Generation: 1,
		State: session.StateIdle, Kind: session.KindPrimary, CreatedAt: sessiontest.Epoch,
		UpdatedAt: sessiontest.Epoch.Add(time.Duration(s.rev) * time.Second),
		Sizes:     summary.Sizes{LogBytes: s.size},
	}, nil
}

func (d *fakeDisk) StatLease(id session.SessionID) (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(id)
	if err != nil || s.record == (vfs.Identity{}) {
		return nil, fs.ErrNotExist
	}
	return fakeInfo{name: "lease.json", id: s.record, size: 300}, nil
}

func (d *fakeDisk) Lease(_ context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inspected[id]++
	s, err := d.lookup(id)
	if err != nil {
		return summary.LeaseStatus{}, err
	}
	ls := s.lease
	if ls.Holder != nil {
		h := *ls.Holder
		ls.Holder = &h
		if ls.State == summary.LeaseHeld {
			ls.HeartbeatAge = time.Since(h.HeartbeatAt)
		}
	}
	return ls, nil
}

// Affects is jsonlstore's (EntryEffect).
func (*fakeDisk) Affects(rest string) Effect { return EntryEffect(rest) }

// fakeInfo describes a file of a fakeDisk; Sys is its identity.
type fakeInfo struct {
	name  string
	id    vfs.Identity
	size  int64
	mtime time.Time
	dir   bool
}

func (fi fakeInfo) Name() string       { return fi.name }
func (fi fakeInfo) Size() int64        { return fi.size }
func (fi fakeInfo) ModTime() time.Time { return fi.mtime }
func (fi fakeInfo) IsDir() bool        { return fi.dir }
func (fi fakeInfo) Sys() any           { return fi.id }
func (fi fakeInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}
