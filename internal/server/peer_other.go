//go:build !linux && !darwin

package server

import (
	"errors"
	"net"
)

// peerOf cannot tell who connected on this system: every connection on
// the unix socket is refused (use loopback TCP with a token).
func peerOf(*net.UnixConn) (peer, error) {
	return peer{}, errors.New("peer credentials are not supported on this system")
}
