package watch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionstore/sessionstore/session"
)

// EventSource is how the watcher hears about changes: fsnotify in
// production (NewSource), a channel fed by the test in tests. Paths are
// absolute, as fsnotify has them. Only the watcher's goroutine calls its
// methods.
type EventSource interface {
	// Add starts watching the directory at path (not its subdirectories).
	// An error for which isWatchLimit is true means a kernel limit was
	// reached: the watcher polls what it cannot watch.
	Add(path string) error
	// Remove stops watching path. The watcher ignores its error: a
	// directory that is gone took its watch with it.
	Remove(path string) error
	// Events delivers changes: Name is the path of the entry that changed
	// in a watched directory (or of the directory itself).
	Events() <-chan fsnotify.Event
	// Errors delivers failures; fsnotify.ErrEventOverflow means events
	// were lost.
	Errors() <-chan error
	// Barrier arranges for an event named token to be delivered after
	// the events of every change completed before the call, so that a
	// reader can wait until the watcher has seen everything that happened
	// before it asked. It fails with ErrNoBarrier when the source cannot.
	Barrier() (token string, err error)
	// Close stops the source and returns once its goroutines are gone.
	Close() error
}

// ErrNoBarrier reports an event source that cannot order a barrier after
// earlier events; the watcher then never claims that its index is current.
var ErrNoBarrier = errors.New("watch: event source has no barrier")

// isWatchLimit reports whether err from EventSource.Add means a kernel
// limit: inotify's max_user_watches (ENOSPC), or descriptors (kqueue opens
// one per watched directory and file: EMFILE, ENFILE).
func isWatchLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// fsnotifySource is the real event source.
//
// Its barrier is a private directory outside the store, watched by the
// same fsnotify watcher: Barrier creates a file there with a fresh name,
// and that creation's event comes after the events of every change made
// before it (inotify queues an event in the system call that causes it,
// and one instance's queue is read in order; kqueue likewise). The store
// itself is never written for it: readers of a store modify nothing in it.
type fsnotifySource struct {
	w       *fsnotify.Watcher
	dir     string // the barrier directory; "" when it could not be made
	n       uint64 // barriers issued
	lastTok string // the file of the latest barrier, removed by the next
}

// NewSource returns the real event source, fsnotify. Errors: those of
// fsnotify.NewWatcher (the kernel's limit on instances, for one).
func NewSource() (EventSource, error) {
	return newFsnotifySource()
}

func newFsnotifySource() (*fsnotifySource, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	src := &fsnotifySource{w: w}
	sweepBarrierDirs(os.TempDir(), time.Now())
	if dir, err := os.MkdirTemp("", barrierDirPrefix+strconv.Itoa(os.Getpid())+"-*"); err == nil {
		if err := w.Add(dir); err != nil {
			_ = os.Remove(dir)
		} else {
			src.dir = dir
		}
	}
	return src, nil
}

// barrierDirPrefix starts the names of barrier directories, followed by
// the owner's process ID. The leading dot: should the temporary directory
// be a store's root, a barrier directory is an entry the store ignores, as
// it does leftovers.
const barrierDirPrefix = ".jsonlstore-watch-"

// sweepBarrierDirs removes the barrier directories in tmp of processes
// that are gone (killed before they closed their store), once they are a
// minute old. A process that may be alive (or whose ID is reused) keeps
// its directory: an empty directory more is the worst that happens.
func sweepBarrierDirs(tmp string, now time.Time) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), barrierDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if fi, err := e.Info(); err != nil || now.Sub(fi.ModTime()) < time.Minute {
			continue
		}
		_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}

func (f *fsnotifySource) Add(path string) error         { return f.w.Add(path) }
func (f *fsnotifySource) Remove(path string) error      { return f.w.Remove(path) }
func (f *fsnotifySource) Events() <-chan fsnotify.Event { return f.w.Events }
func (f *fsnotifySource) Errors() <-chan error          { return f.w.Errors }

func (f *fsnotifySource) Barrier() (string, error) {
	if f.dir == "" {
		return "", ErrNoBarrier
	}
	f.n++
	tok := filepath.Join(f.dir, strconv.FormatUint(f.n, 10))
	// Plain system calls: this file is outside the store, and an
	// *os.File would cost five more (registering it with the poller).
	fd, err := syscall.Open(tok, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: tok, Err: err}
	}
	_ = syscall.Close(fd)
	if f.lastTok != "" {
		_ = syscall.Unlink(f.lastTok)
	}
	f.lastTok = tok
	return tok, nil
}

// Close closes the fsnotify watcher and waits until its reading goroutine
// has closed the Events channel (kqueue's Close does not wait for it), so
// that no goroutine outlives the store.
func (f *fsnotifySource) Close() error {
	err := f.w.Close()
	for range f.w.Events {
		// Nobody reads the events any more: drain until the channel closes.
	}
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
	return err
}

// addWatch asks the source to watch path, within the budget. A refusal
// for a kernel limit stops further attempts until the next full rescan.
func (w *Watcher) addWatch(path string) bool {
	if w.src == nil || w.limited || (w.budget >= 0 && w.watching >= w.budget) {
		return false
	}
	err := w.src.Add(path)
	switch {
	case err == nil:
		w.watching++
		return true
	case isWatchLimit(err):
		w.limited = true
		if !w.limitLogged {
			w.limitLogged = true
			w.logger.Info("jsonlstore: watch limit reached; polling the directories beyond it",
				"err", err, "watched", w.watching, "interval", w.poll)
		}
	}
	return false
}

func (w *Watcher) watchSession(id session.SessionID, t *tracked) {
	if !t.watched && w.rootWatched && w.addWatch(w.prefix+string(id)) {
		t.watched = true
		delete(w.polled, id)
	}
}

func (w *Watcher) unwatchSession(id session.SessionID, t *tracked) {
	// The error is ignored: a directory renamed or removed took its watch
	// with it.
	_ = w.src.Remove(w.prefix + string(id))
	t.watched = false
	w.watching--
	w.polled[id] = t
}

// sourceLost turns the watcher into a poller when its event source dies.
func (w *Watcher) sourceLost() {
	w.logger.Warn("jsonlstore: file system events stopped; polling", "interval", w.poll)
	w.rootWatched = false
	for id, t := range w.sessions {
		t.watched = false
		w.polled[id] = t
	}
	w.answer(w.waiters, false)
	w.answer(w.queued, false)
	w.waiters, w.queued, w.barrier = nil, nil, ""
	_ = w.src.Close() // it failed already
	w.src = nil
}
