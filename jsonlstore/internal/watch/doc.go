// Package watch keeps a summary.Index current with the sessions of a
// jsonlstore root, for Store.Watch and for List. It reads the store
// through a small interface (Disk) and is driven by file system events
// (fsnotify) and checked by polling:
//
//   - It watches directories, never files: the root, where sessions appear
//     (a temporary directory renamed to the ID) and disappear (renamed to
//     a trash name), and each session directory, where the log is appended
//     to or replaced and summary.json is rewritten.
//   - An event only marks its session due; the summary is recomputed
//     debounce after the first event of a burst, from the state on disk
//     then. A session appended to 1,000 times a second is recomputed about
//     ten times a second, and the last change of a burst is always seen,
//     because an event after a recomputation schedules another. Polls keep
//     to the same pace (see check); only Current, which needs the index
//     current, recomputes due sessions at once.
//   - A recomputation first stats the log and does nothing when its
//     identity, size and modification time are those the summary was
//     computed from, so events that change nothing (the summary rewrite
//     that follows an append) cost one stat.
//   - Lost events are survived, not prevented: on fsnotify's overflow the
//     watcher rescans everything; a directory it cannot watch (the kernel's
//     limit on watches, or on macOS its own descriptor budget, see
//     watchBudget) is polled every poll interval; and a full rescan runs
//     every rescanTicks poll intervals whatever happens, so the index
//     converges within two poll intervals even if every event is lost. A
//     scan stats each log — on a goroutine of its own for the periodic
//     ones, so that events and Currents are not held up — and recomputes
//     only what changed.
//   - Without an event source (a store on a simulated file system, or
//     fsnotify unavailable) the watcher rescans every poll interval, as a
//     pure poller.
//
// One goroutine owns all of this state; Current asks it, through syncReq,
// to confirm that the index is current (sync.go), after which Page
// answers a query from memory.
//
// # Usage
//
//	w := watch.Start(disk, watch.Options{Dir: root, Source: src, PollInterval: time.Second})
//	defer w.Close()
//	changes, err := w.Subscribe(ctx) // the current state, then changes
//	if w.Current(ctx) {              // every change made before the call is in
//		page, err := w.Page(q)
//	}
package watch
