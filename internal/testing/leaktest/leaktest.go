package leaktest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Main runs the tests, checks for leaks, and exits.
func Main(m *testing.M, opts ...goleak.Option) { os.Exit(Run(m, opts...)) }

// Run runs the tests and returns the exit code for os.Exit: m.Run's, or 1
// when the tests passed but left goroutines or descriptors behind (each
// leak is described on stderr).
func Run(m *testing.M, opts ...goleak.Option) int {
	primeRuntimeFDs()
	before, fdsOK := openFDs()
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := goleak.Find(opts...); err != nil {
		fmt.Fprintf(os.Stderr, "leaktest: goroutines leaked by the tests:\n%v\n", err)
		code = 1
	}
	if fdsOK {
		if leaked := leakedFDs(before); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leaktest: file descriptors leaked by the tests:\n  %s\n", strings.Join(leaked, "\n  "))
			code = 1
		}
	}
	return code
}

// primeRuntimeFDs makes the runtime open the descriptors it keeps for the
// life of the process (the network poller's epoll and wake-up descriptors)
// before the first snapshot, so they are not mistaken for leaks.
func primeRuntimeFDs() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	_ = r.Close() // a pipe only used for the count
	_ = w.Close()
}

// fdSettle is how long leakedFDs waits for descriptors that are being
// closed by finishing goroutines (a child process's pipes being reaped).
const fdSettle = 2 * time.Second

// leakedFDs returns "fd -> target" for each descriptor open now that was
// not open before. It retries for a short while: the goroutine check has
// already waited for stray goroutines, but a descriptor closed by a
// finalizer or a just-reaped child may take a moment.
func leakedFDs(before map[string]string) []string {
	deadline := time.Now().Add(fdSettle)
	for {
		now, ok := openFDs()
		if !ok {
			return nil
		}
		var leaked []string
		for fd, target := range now {
			if prev, ok := before[fd]; ok && prev == target {
				continue
			}
			leaked = append(leaked, fd+" -> "+target)
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			slices.Sort(leaked)
			return leaked
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openFDs maps each open descriptor of this process to what it refers to.
// ok is false where /proc/self/fd does not exist (not Linux).
func openFDs() (fds map[string]string, ok bool) {
	const dir = "/proc/self/fd"
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	names, err := f.Readdirnames(-1)
	// The descriptor reading the directory is listed too; leave it out.
	self := fmt.Sprint(f.Fd())
	_ = f.Close() // read-only
	if err != nil {
		return nil, false
	}
	fds = make(map[string]string, len(names))
	for _, n := range names {
		if n == self {
			continue
		}
		target, err := os.Readlink(dir + "/" + n)
		if err != nil {
			continue // closed between the listing and the readlink
		}
		fds[n] = target
	}
	return fds, true
}
