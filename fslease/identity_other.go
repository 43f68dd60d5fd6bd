//go:build unix && !linux && !darwin

package fslease

import "time"

// platformIdentity has no source of process start time or boot ID on this
// system; the fields stay empty.
func platformIdentity(int) (time.Time, uint64, string) {
	return time.Time{}, 0, ""
}
