package server

import "golang.org/x/sys/unix"

// credOf reads the credentials of the process at the other end of the
// socket fd (SO_PEERCRED).
func credOf(fd int) (peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return peer{}, err
	}
	return peer{unix: true, uid: int(cred.Uid), pid: int(cred.Pid)}, nil
}
