package jsonlstore

import (
	"context"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// watcher keeps a summary.Index current with the sessions on disk by
// rescanning the root every PollInterval: for each session it compares the
// log's identity and size with what it last saw and recomputes the summary
// of those that changed. It converges whatever events are lost, because it
// looks at state, not events.
type watcher struct {
	s     *Store
	ix    *summary.Index
	known map[session.SessionID]logState
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

type logState struct {
	id   vfs.Identity
	size int64
}

func (s *Store) startWatcher() *watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil {
		return s.watch
	}
	w := &watcher{s: s, ix: summary.NewIndex(), known: map[session.SessionID]logState{}, stop: make(chan struct{}), done: make(chan struct{})}
	w.rescan()
	go w.loop()
	s.watch = w
	return w
}

func (w *watcher) loop() {
	defer close(w.done)
	t := time.NewTicker(w.s.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.rescan()
		}
	}
}

func (w *watcher) rescan() {
	ids, err := w.s.sessionIDs()
	if err != nil {
		return
	}
	seen := make(map[session.SessionID]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
		fi, err := w.s.fs.Lstat(logPath(id))
		if err != nil {
			continue
		}
		st := logState{id: vfs.IdentityOf(fi), size: fi.Size()}
		if old, ok := w.known[id]; ok && old == st {
			continue
		}
		sum, err := w.s.summaryOf(context.Background(), id)
		if err != nil {
			continue
		}
		w.known[id] = st
		w.ix.Put(sum)
	}
	for id := range w.known {
		if !seen[id] {
			delete(w.known, id)
			w.ix.Delete(id)
		}
	}
}

func (w *watcher) close() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.ix.Close()
	})
}

// Watch returns level-triggered changes: the current state of every
// session, then changes as the watcher sees them.
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if s.closed.Load() {
		return nil, sessionstore.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := s.startWatcher()
	return w.ix.Subscribe(ctx).C(), nil
}
