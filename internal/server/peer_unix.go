//go:build linux || darwin

package server

import "net"

// peerOf reads the connecting process's credentials (credOf, one per
// system).
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var p peer
	var cerr error
	if err := raw.Control(func(fd uintptr) { p, cerr = credOf(int(fd)) }); err != nil {
		return peer{}, err
	}
	return p, cerr
}
