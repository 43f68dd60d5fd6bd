package layout

import (
	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// OpErr is the store's operational error: operation op on session id
// ("" for the store as a whole) failed with err.
func OpErr(op string, id session.SessionID, err error) error {
	return &sessionstore.OpError{Store: "jsonlstore", Op: op, ID: id, Err: err}
}

// PathErr is opErr naming the file at fault, relative to the root.
func PathErr(op string, id session.SessionID, path string, err error) error {
	return &sessionstore.OpError{Store: "jsonlstore", Op: op, ID: id, Path: path, Err: err}
}
