package fslease

import (
	"time"

	"golang.org/x/sys/unix"
)

// platformIdentity returns the process start time from sysctl
// kern.proc.pid and the boot session UUID; zero values where unavailable.
// macOS has no tick count comparable to Linux's, so ticks is 0.
func platformIdentity(pid int) (start time.Time, ticks uint64, bootID string) {
	if kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid); err == nil {
		tv := kp.Proc.P_starttime
		start = time.Unix(tv.Sec, int64(tv.Usec)*int64(time.Microsecond)).UTC()
	}
	if id, err := unix.Sysctl("kern.bootsessionuuid"); err == nil {
		bootID = id
	}
	return start, 0, bootID
}
