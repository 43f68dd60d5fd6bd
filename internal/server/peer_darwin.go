package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the connecting process's credentials: its user
// (LOCAL_PEERCRED) and process (LOCAL_PEERPID).
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Xucred
	var pid int
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if cerr == nil {
			pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID) // the uid decides; the pid only names the client
		}
	}); err != nil {
		return peer{}, err
	}
	if cerr != nil {
		return peer{}, cerr
	}
	return peer{unix: true, uid: int(cred.Uid), pid: pid}, nil
}
