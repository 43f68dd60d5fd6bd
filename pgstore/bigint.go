package pgstore

import (
	"fmt"

	"github.com/sessionstore/sessionstore/sessnap"
)

// Revisions and generations are uint64 in Go and bigint (int64) columns in
// the schema. Both are bounded by 2^53-1 (sessnap.MaxSafeInteger): the
// record format (internal/record) refuses a larger rev or gen, so a record
// line cannot carry one, and every value pgstore handles either came from
// such a line or from these columns. toBigint and fromBigint convert at
// that bound, which both types hold exactly; a value past it is an error
// (a database edited by hand, or a session 2^53 appends long), never a
// silent wrap.

// toBigint converts a revision or generation (what names it, for the
// error) to its column's type.
func toBigint(what string, v uint64) (int64, error) {
	if v > sessnap.MaxSafeInteger {
		return 0, fmt.Errorf("pgstore: %s %d is above 2^53-1, the record format's bound", what, v)
	}
	return int64(v), nil
}

// toBigints converts a record's revision and generation for their
// columns (toBigint).
func toBigints(rev, gen uint64) (int64, int64, error) {
	r, err := toBigint("revision", rev)
	if err != nil {
		return 0, 0, err
	}
	g, err := toBigint("generation", gen)
	return r, g, err
}

// fromBigint converts a revision or generation read from its column.
func fromBigint(what string, v int64) (uint64, error) {
	if v < 0 || v > sessnap.MaxSafeInteger {
		return 0, fmt.Errorf("pgstore: %s %d in the database is outside 0 to 2^53-1", what, v)
	}
	return uint64(v), nil
}
