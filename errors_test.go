package sessionstore_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
)

// TestOpError: an operational error reads as store, operation, session
// and file, and classifies as its cause.
func TestOpError(t *testing.T) {
	ce := &sessionstore.CorruptionError{ID: "s-1", Path: "s-1/log.jsonl", Offset: 7, Err: errors.New("bad crc")}
	for _, c := range []struct {
		err  *sessionstore.OpError
		want string
		is   error
	}{
		{&sessionstore.OpError{Store: "jsonlstore", Op: "append", ID: "s-1", Err: fs.ErrPermission}, "jsonlstore: append s-1: permission denied", fs.ErrPermission},
		{&sessionstore.OpError{Store: "jsonlstore", Op: "write blob", Path: "s-1/blobs/ab", Err: fs.ErrExist}, "jsonlstore: write blob (s-1/blobs/ab): file already exists", fs.ErrExist},
		{&sessionstore.OpError{Store: "pgstore", Op: "list", Err: sessionstore.ErrClosed}, "pgstore: list: sessionstore: closed", sessionstore.ErrClosed},
		{&sessionstore.OpError{Store: "jsonlstore", Op: "repair", ID: "s-1", Err: ce}, "jsonlstore: repair s-1: " + ce.Error(), sessionstore.ErrCorrupt},
	} {
		require.Equal(t, c.want, c.err.Error())
		var err error = c.err
		require.ErrorIs(t, err, c.is)
		var oe *sessionstore.OpError
		require.ErrorAs(t, err, &oe)
		require.Same(t, c.err, oe)
	}
	var got *sessionstore.CorruptionError
	require.ErrorAs(t, error(&sessionstore.OpError{Store: "jsonlstore", Op: "load", ID: "s-1", Err: ce}), &got, "a typed cause stays typed")
	require.Same(t, ce, got)
}
