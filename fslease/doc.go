// Package fslease is a cross-process operation lease on a directory: at most
// one holder at a time among all processes on the machine, decided by an
// exclusive flock(2), with a monotonic generation and the holder's identity
// recorded beside it.
//
// # Usage
//
//	l, err := fslease.Acquire(ctx, dir, fslease.Options{
//		Label:         "agent-cli",
//		MinGeneration: highestGenerationInMyLog,
//	})
//	if err != nil {
//		return err // errors.Is(err, context.DeadlineExceeded), fslease.ErrOverflow, ...
//	}
//	defer l.Release(ctx)
//	if l.PreviousState() == fslease.PrevStale {
//		// the previous holder died: recover its half-done work
//	}
//	for ... {
//		if err := l.Check(); err != nil { // errors.Is(err, fslease.ErrLost)
//			return err
//		}
//		write(l.Generation(), ...)
//		_ = l.Touch(time.Now()) // readers see the holder at work
//	}
//
// TryAcquire fails at once with a *HeldError (errors.Is(err, ErrHeld)) that
// names the holder. Readers call Inspect, which modifies nothing.
//
// A directory built under a temporary name and then published by a rename
// can be leased with Options.DirSynced (the record is written in place,
// and its creator syncs it, SyncRecord, and the directory before the
// rename), and a creator that is done with it before publishing calls
// MarkReleased, so that it is published with its lease already released
// and Release only unlocks.
//
// # Files
//
//	DIR/
//	  lease.lock            flock target, 0600; created on first Acquire, never unlinked;
//	                        its modification time is the holder's latest Touch
//	  lease.json            the Record, 0600; replaced atomically (temp, fsync, rename, fsync DIR)
//	  lease.json.tmp-<hex>  transient; a leftover from a killed holder is swept by the next Acquire
//
// lease.json looks like this (times in UTC; pid_start, pid_start_ticks,
// boot_id and label are omitted when empty):
//
//	{
//	  "version": 1,
//	  "generation": 42,
//	  "owner": {
//	    "host": "laptop",
//	    "pid": 81234,
//	    "pid_start": "2026-03-01T09:14:03.27Z",
//	    "pid_start_ticks": 1734527,
//	    "boot_id": "0f6c1e9a-5d2b-4c1e-9a7f-2b8e4d6c1a30",
//	    "nonce": "9b1f0c2a4e6d8f10a2c4e6f8091b3d5f",
//	    "label": "agent-cli"
//	  },
//	  "acquired_at": "2026-03-01T09:15:00.123456789Z",
//	  "heartbeat_at": "2026-03-01T09:15:30.123456789Z",
//	  "released": false
//	}
//
// # Liveness
//
// A held lock means a live holder, even a stopped one; an unheld lock whose
// record is not marked released means the holder died (Stale). Host, pid,
// process start time and boot ID are for people and diagnostics only: a
// copy of a held directory (cp -r, a backup restore) is Stale in the copy
// although the pid in its record still runs. Heartbeats only tell people
// how recently a holder was active; so does Touch, which a store calls
// after each write it makes under the lease: at most once a second it sets
// lease.lock's modification time (one system call, no data, nothing
// synced), and Inspect reports the later of that and the record's
// heartbeat as the holder's last sign of life (Status.ActiveAt), so that a
// busy holder never looks idle though it never heartbeats.
//
// The lock descriptor is close-on-exec, so children a holder starts do not
// keep the lease alive after it dies. Two Leases in one process exclude
// each other exactly as two processes do. Acquire polls a non-blocking
// flock with a short backoff (up to 10ms), so it notices a cancelled
// context at once but is not first-come first-served.
//
// # Generations
//
// Every acquisition writes generation max(previous, Options.MinGeneration)
// + 1, at most MaxGeneration (2^53-1, exact in every JSON reader); beyond
// that Acquire fails with ErrOverflow. An empty, damaged or oversized
// lease.json is recovered (PrevUnreadable), never a panic, keeping any
// generation still legible in it as a floor; a record from a newer version
// is not interpreted but its generation still counts. When lease.json is
// lost or illegible, MinGeneration is the only floor: the store passes the
// highest generation in its log, and that is what keeps generations
// monotonic across such damage.
//
// # Fencing
//
// Check verifies that lease.json still holds this Lease's generation and
// nonce and that the lock descriptor still refers to the file at
// DIR/lease.lock. A kernel lock cannot be stolen from a live process; Check
// catches what happens around it: the lock file replaced, the directory
// moved or restored from a copy.
//
// # Limits
//
// Network filesystems (NFS, SMB, FUSE network mounts) are not supported:
// flock there is emulated, advisory across hosts at best, or a no-op. Use
// local filesystems. lease.lock and lease.json must be regular files: a
// symlink planted in their place is refused (ErrSymlink), never followed.
// Linux is the tested platform; macOS builds.
package fslease
