package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the connecting process's credentials (SO_PEERCRED).
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if cerr != nil {
		return peer{}, cerr
	}
	return peer{unix: true, uid: int(cred.Uid), pid: int(cred.Pid)}, nil
}
