package server

import "golang.org/x/sys/unix"

// credOf reads the credentials of the process at the other end of the
// socket fd: its user (LOCAL_PEERCRED) and process (LOCAL_PEERPID).
func credOf(fd int) (peer, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return peer{}, err
	}
	pid, _ := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID) // the uid decides; the pid only names the client
	return peer{unix: true, uid: int(cred.Uid), pid: pid}, nil
}
