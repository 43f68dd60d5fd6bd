package jsonlstore

import (
	"errors"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/lease"
	"github.com/sessionstore/sessionstore/summary"
)

// The store takes its leases through package lease (the seam): the
// power-loss tests give it an in-memory leaser (leases_sim_test.go).
type (
	leaser      = lease.Leaser
	leaseHandle = lease.Handle
	fsLeaser    = lease.FS
)

// previousStatus describes the previous holder for a RecoveryReport.
func previousStatus(l leaseHandle) summary.LeaseStatus { return lease.Previous(l) }

func isHeld(err error) bool { return errors.Is(err, fslease.ErrHeld) }

// tryLockFile takes the exclusive lock on the existing file at name
// (relative to the root) with the store's leaser, retrying a moment
// (lease.TryLockFile); held reports that someone else has it.
func (s *Store) tryLockFile(name string) (func(), bool, error) {
	return lease.TryLockFile(s.leases, s.root.Abs(name))
}
