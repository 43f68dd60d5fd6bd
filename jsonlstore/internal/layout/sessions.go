package layout

import (
	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
)

// SessionIDs lists the session directories under the root of fsys,
// skipping leftovers and anything that is not a valid session ID.
func SessionIDs(fsys vfs.FS) ([]session.SessionID, error) {
	entries, err := fsys.ReadDir(".")
	if err != nil {
		return nil, OpErr("list root", "", err)
	}
	ids := make([]session.SessionID, 0, len(entries))
	for _, e := range entries {
		id := session.SessionID(e.Name())
		if !e.IsDir() || sessionstore.ValidateID(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}
