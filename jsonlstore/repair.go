package jsonlstore

import (
	"context"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobgc"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/offline"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/repair"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/verify"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// Repair is the explicit, reported way out of corruption for session id.
//
// It takes the session's lease (TryAcquire; or Acquire waiting up to
// opts.Wait), which runs normal recovery: an uncommitted tail is moved to
// forensic/ and truncated. Under the lease it then checks the whole log
// forwards, as Verify does. Corruption found there is reported in Found
// and returned as a *sessionstore.CorruptionError, and nothing else
// changes — unless opts.TruncateAtCorruption is set: then the log is cut
// at its first bad record. Every byte the cut removes is first copied into
// a forensic file (synced, with its directory); summary.json is moved
// into forensic/ too (durably, before the log shrinks, so it can never
// vouch for revisions the log no longer has); then the log is truncated
// and synced. This also frees a session whose damaged tail makes Acquire
// fail. A log with no sound record to keep, damage in the archives, or
// records of a kind this program does not know are not cut.
//
// Repair finally sweeps leftover temporary and trash directories (named
// exactly as the store names them) at the
// store root older than Options.LeftoverAge whose lease nobody holds.
//
// Errors: ErrNotFound, ErrInvalidID, ErrClosed, *LeaseHeldError, a
// *CorruptionError as above, I/O errors. The report is filled as far as
// Repair got.
func (s *Store) Repair(ctx context.Context, id session.SessionID, opts maintenance.RepairOptions) (maintenance.RepairReport, error) {
	return repair.New(s.root, offlineHost{s}).Repair(ctx, id, opts)
}

// offline returns the store's backup and sync (package offline).
func (s *Store) offline() *offline.Store { return offline.New(s.root, offlineHost{s}) }

// verifier returns Verify's check of the store's sessions.
func (s *Store) verifier() *verify.Checker { return verify.New(s.root, s.check) }

// blobs returns the store's collection of unreferenced blobs.
func (s *Store) blobs() *blobgc.Collector { return blobgc.New(s.root, s.check) }

// offlineHost is the store as the rooms that work on its sessions from
// outside a writer reach it (offline.Host, repair.Host): the contract's
// methods, and the lease and writer internals they work under.
type offlineHost struct{ *Store }

var (
	_ offline.Host = offlineHost{}
	_ repair.Host  = offlineHost{}
)

func (h offlineHost) Check(ctx context.Context, id session.SessionID) error { return h.check(ctx, id) }

// repairLease is a lease taken for a repair, before its writer is opened:
// marked says whether takeLease made its catalog mark.
type repairLease struct {
	leaseHandle
	marked bool
}

func (h offlineHost) TakeLease(ctx context.Context, id session.SessionID, opts sessionstore.AcquireOptions, try bool) (repair.Lease, error) {
	lease, marked, err := h.leaseSession(ctx, id, opts, try)
	if err != nil {
		return nil, err
	}
	return repairLease{lease, marked}, nil
}

func (h offlineHost) CheckWritable(id session.SessionID) error { return h.checkWritable(id) }

func (h offlineHost) OpenWriter(id session.SessionID, l repair.Lease) (repair.Writer, error) {
	rl := l.(repairLease) // TakeLease's
	w, err := h.openWriter(id, rl.leaseHandle, rl.marked)
	if err != nil {
		return nil, err // not a nil *writer in an interface
	}
	return w, nil
}

func (h offlineHost) SaveForensic(id session.SessionID, what string, off int64, v *logfile.View, n int64) (string, error) {
	return h.saveForensic(id, what, off, v, n)
}

func (h offlineHost) InspectLease(ctx context.Context, dir string) (fslease.Status, error) {
	return h.leases.Inspect(ctx, dir)
}

func (h offlineHost) LockLease(id session.SessionID) (func(), bool, error) {
	name := layout.SessionDir(id) + "/" + fslease.LockFile
	// Made as fslease makes it (O_CREATE, no O_EXCL, never replaced), so
	// that a holder and this lock always lock the same file.
	f, err := h.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, layout.FilePerm)
	if err != nil {
		return nil, false, err
	}
	_ = f.Close()
	return h.tryLockFile(name)
}

func (h offlineHost) MarkCatalog(id session.SessionID, gen uint64) {
	h.cat.Mark(id, gen, catalogfile.DirsDurable)
}

// ForgetBlob implements repair.Writer: a blob collection removed the
// blob of hash (blobfile.Writer.Forget).
func (w *writer) ForgetBlob(hash string) { w.blobs.Forget(hash) }
