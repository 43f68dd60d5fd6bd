package jsonlstore

import (
	"context"
	"io/fs"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/watch"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// startWatcher starts the store's watcher (package watch) unless it runs
// already; it returns nil when the store is closed.
func (s *Store) startWatcher() *watch.Watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil || s.closed.Load() {
		return s.watch
	}
	s.watch = watch.Start(storeDisk{s}, s.watchOptions())
	return s.watch
}

// watchOptions configures the store's watcher. fsnotify needs real
// directories: a store on a simulated file system (no root) is polled.
func (s *Store) watchOptions() watch.Options {
	opts := watch.Options{Dir: s.dir, PollInterval: s.opts.PollInterval, Logger: s.opts.Logger}
	if s.osRoot != nil {
		src, err := watch.NewSource()
		if err != nil {
			s.opts.Logger.Warn("jsonlstore: no file system events; polling", "err", err, "interval", s.opts.PollInterval)
		} else {
			opts.Source = src
		}
	}
	return opts
}

// Watch returns level-triggered changes: the current state of every
// session, then changes as the watcher sees them (package watch), each
// with the session's lease status. It starts the store's watcher on first
// use and returns once its initial scan is complete, which inspects every
// session's lease.
//
// Latency: a new revision, an acquisition, a release or a takeover is seen
// about 100ms after it happens (file system events, debounced); a holder
// that dies writes nothing and sends no event, so the leases seen held are
// probed at every Options.PollInterval, and a killed holder's lease shows
// stale within one interval (a second by default). Where events are not
// available (a directory beyond the kernel's watch limits, macOS beyond
// the watcher's descriptor budget, no fsnotify) everything is seen within
// two intervals.
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if s.closed.Load() {
		return nil, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.startWatcher()
	if w == nil {
		return nil, sessionstore.ErrClosed
	}
	return w.Subscribe(ctx)
}

// storeDisk is the store as its watcher reads it (watch.Disk).
type storeDisk struct{ s *Store }

var _ watch.Disk = storeDisk{}

func (d storeDisk) IDs() ([]session.SessionID, error) { return d.s.sessionIDs() }

func (d storeDisk) StatDir(id session.SessionID) (fs.FileInfo, error) {
	return d.s.fs.Lstat(layout.SessionDir(id))
}

func (d storeDisk) StatLog(id session.SessionID) (fs.FileInfo, error) {
	return logfile.StatLog(d.s.root, id)
}

func (d storeDisk) Summary(ctx context.Context, id session.SessionID) (summary.Summary, error) {
	return d.s.summaryOf(ctx, id)
}

func (d storeDisk) StatLease(id session.SessionID) (fs.FileInfo, error) {
	return d.s.fs.Lstat(layout.SessionDir(id) + "/" + fslease.RecordFile)
}

func (d storeDisk) Lease(ctx context.Context, id session.SessionID) (summary.LeaseStatus, error) {
	return d.s.Lease(ctx, id)
}

// Affects tells the watcher which entries of a session directory matter
// (watch.EntryEffect).
func (storeDisk) Affects(rest string) watch.Effect { return watch.EntryEffect(rest) }
