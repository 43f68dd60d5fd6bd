package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// Sentinel errors.
var (
	// ErrListening reports a socket another server answers on.
	ErrListening = errors.New("server: another server listens on the socket")

	// ErrNoToken reports a TCP listener without a bearer token.
	ErrNoToken = errors.New("server: a TCP listener needs a bearer token")
)

// apiError is an error as the API answers it: a status, a code a client
// can branch on, a message a person can read, and for lease errors the
// lease as it is now.
type apiError struct {
	Status  int                  `json:"-"`
	Message string               `json:"error"`
	Code    string               `json:"code"`
	Lease   *summary.LeaseStatus `json:"lease,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func apiErrorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// codes are the API's answers to the store's sentinel errors, in the
// order they are tried: the first whose errors err wraps one of answers.
var codes = []struct {
	status int
	code   string
	is     []error
}{
	{http.StatusBadRequest, "invalid_id", []error{sessionstore.ErrInvalidID}},
	{http.StatusNotFound, "not_found", []error{sessionstore.ErrNotFound}},
	{http.StatusConflict, "exists", []error{sessionstore.ErrExists}},
	{http.StatusConflict, "lease_lost", []error{sessionstore.ErrLeaseLost}},
	{http.StatusConflict, "conflict", []error{sessionstore.ErrConflict}},
	{http.StatusConflict, "schema_too_new", []error{sessionstore.ErrSchemaTooNew}},
	{http.StatusBadRequest, "invalid", []error{sessionstore.ErrInvalidSnapshot, sessnap.ErrMalformed, sessnap.ErrInvalid, errItem}},
	{http.StatusRequestEntityTooLarge, "too_large", []error{sessionstore.ErrTooLarge}},
	{http.StatusBadRequest, "bad_query", []error{sessionstore.ErrBadQuery, summary.ErrBadCursor}},
	// A store opened without what the request needs (a directory store
	// without its search index).
	{http.StatusNotImplemented, "unsupported", []error{errors.ErrUnsupported}},
	{http.StatusServiceUnavailable, "unavailable", []error{sessionstore.ErrClosed, context.Canceled, context.DeadlineExceeded}},
}

// errorOf maps a store's (or a Writer's) error to the API's.
func errorOf(err error) *apiError {
	var ae *apiError
	var he *sessionstore.LeaseHeldError
	var ce *sessionstore.CorruptionError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &he):
		e := apiErrorf(http.StatusConflict, "lease_held", "%v", err)
		e.Lease = &he.Status
		return e
	}
	for _, c := range codes {
		for _, target := range c.is {
			if errors.Is(err, target) {
				return apiErrorf(c.status, c.code, "%v", err)
			}
		}
	}
	switch {
	case errors.As(err, &ce):
		return apiErrorf(http.StatusInternalServerError, "corrupt", "%v", err)
	case errors.Is(err, sessionstore.ErrWriterFailed):
		return apiErrorf(http.StatusInternalServerError, "writer_failed", "%v", err)
	}
	return apiErrorf(http.StatusInternalServerError, "internal", "%v", err)
}

// ends reports whether err leaves the handle's writer unusable.
func ends(err error) (reason string, ok bool) {
	switch {
	case errors.Is(err, sessionstore.ErrLeaseLost):
		return "lease_lost", true
	case errors.Is(err, sessionstore.ErrWriterFailed):
		return "failed", true
	case errors.Is(err, sessionstore.ErrClosed):
		return "released", true
	}
	return "", false
}
