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
	case errors.Is(err, sessionstore.ErrInvalidID):
		return apiErrorf(http.StatusBadRequest, "invalid_id", "%v", err)
	case errors.Is(err, sessionstore.ErrNotFound):
		return apiErrorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, sessionstore.ErrExists):
		return apiErrorf(http.StatusConflict, "exists", "%v", err)
	case errors.Is(err, sessionstore.ErrLeaseLost):
		return apiErrorf(http.StatusConflict, "lease_lost", "%v", err)
	case errors.Is(err, sessionstore.ErrConflict):
		return apiErrorf(http.StatusConflict, "conflict", "%v", err)
	case errors.Is(err, sessionstore.ErrSchemaTooNew):
		return apiErrorf(http.StatusConflict, "schema_too_new", "%v", err)
	case errors.Is(err, sessionstore.ErrInvalidSnapshot), errors.Is(err, sessnap.ErrMalformed), errors.Is(err, sessnap.ErrInvalid), errors.Is(err, errItem):
		return apiErrorf(http.StatusBadRequest, "invalid", "%v", err)
	case errors.Is(err, sessionstore.ErrTooLarge):
		return apiErrorf(http.StatusRequestEntityTooLarge, "too_large", "%v", err)
	case errors.Is(err, sessionstore.ErrBadQuery), errors.Is(err, summary.ErrBadCursor):
		return apiErrorf(http.StatusBadRequest, "bad_query", "%v", err)
	case errors.Is(err, errors.ErrUnsupported):
		// A store opened without what the request needs (a directory
		// store without its search index).
		return apiErrorf(http.StatusNotImplemented, "unsupported", "%v", err)
	case errors.Is(err, sessionstore.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apiErrorf(http.StatusServiceUnavailable, "unavailable", "%v", err)
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
