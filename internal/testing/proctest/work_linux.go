package proctest

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// schedstat reports whether the kernel keeps the threads' run and
// run-queue times (CONFIG_SCHED_INFO).
var schedstat = sync.OnceValue(func() bool {
	_, err := os.ReadFile("/proc/self/schedstat")
	return err == nil
})

// childWork reads the work of processes pids from /proc: for each of
// their threads, its run and run-queue times (schedstat) and its state
// (stat: D is a wait for a disk). A process that has gone counts nothing.
func childWork(pids []int) work {
	w := work{known: schedstat()}
	if !w.known {
		return w
	}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // exited (or exiting): its work is over
		}
		for _, t := range tasks {
			sched, err := os.ReadFile(dir + t.Name() + "/schedstat")
			if err != nil {
				continue // the thread ended
			}
			f := bytes.Fields(sched)
			if len(f) < 2 {
				continue
			}
			for _, n := range f[:2] {
				ns, _ := strconv.ParseInt(string(n), 10, 64)
				w.ran += time.Duration(ns)
			}
			if stat, err := os.ReadFile(dir + t.Name() + "/stat"); err == nil {
				if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'D' {
					w.disk = true
				}
			}
		}
	}
	return w
}
