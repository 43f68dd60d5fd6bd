package pgstore

import "errors"

// Sentinel errors of pgstore itself. Everything else it returns wraps a
// sessionstore sentinel (sessionstore.ErrNotFound, ErrConflict, …).
var (
	// ErrSchemaNewer reports a database whose schema was migrated by a newer
	// program: this one refuses to read or write it.
	ErrSchemaNewer = errors.New("pgstore: database schema is newer than this program")

	// ErrSchemaOutdated reports a database whose schema is missing or older
	// than this program needs: run Migrate first.
	ErrSchemaOutdated = errors.New("pgstore: database schema is not migrated")

	// ErrNotHeld reports an ExpireLease of a session whose lease nobody
	// holds.
	ErrNotHeld = errors.New("pgstore: lease not held")
)
