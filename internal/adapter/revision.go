package adapter

import (
	"fmt"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// LoadRevision is every adapter's Store.LoadRevision rule: revision 0
// does not exist (Load reads the latest), so once ready passes (the
// store open, id valid) it is sessionstore.ErrNotFound; any other
// revision is load's to read.
func LoadRevision(id session.SessionID, rev uint64, ready func() error, load func() (sessionstore.Record, error)) (sessionstore.Record, error) {
	if rev != 0 {
		return load()
	}
	if err := ready(); err != nil {
		return sessionstore.Record{}, err
	}
	return sessionstore.Record{}, fmt.Errorf("%w: session %s revision 0", sessionstore.ErrNotFound, id)
}
