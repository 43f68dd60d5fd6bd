package record

import "github.com/sessionstore/sessionstore"

// The record cap: the most one record takes, and so what a reader
// allocates for one (sessionstore.DefaultMaxRecordBytes says what it
// bounds). Its rules, for every adapter, are stated here once:
//
//   - A store's own cap is its Options.MaxRecordBytes, or the default for
//     0 or less (Cap).
//   - A session records the largest cap it was written with, so that a
//     store with a smaller cap of its own still reads, and goes on
//     writing from, every record written under the larger one; a reader
//     honours a recorded cap up to sessionstore.MaxReadRecordBytes and
//     never more (SessionCap).
//   - An imported session records at least the largest record it holds,
//     payload or rebuilt snapshot (each adapter's Import).
//
// The encoder (Tracker, the appender) refuses what does not fit with
// sessionstore.ErrTooLarge; the readers (Reader, Snapshots) take what is
// larger than their cap for damage.

// Cap returns the record cap of an Options.MaxRecordBytes of n: n, or
// sessionstore.DefaultMaxRecordBytes for 0 or less.
func Cap(n int) int {
	if n <= 0 {
		return sessionstore.DefaultMaxRecordBytes
	}
	return n
}

// SessionCap returns the record cap a store whose own cap is own reads and
// writes a session with that records cap recorded (0: none): the larger
// of the two, a recorded cap honoured up to
// sessionstore.MaxReadRecordBytes.
func SessionCap(own int, recorded int64) int {
	return max(own, int(min(recorded, sessionstore.MaxReadRecordBytes)))
}
