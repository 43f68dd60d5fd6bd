// Package proctest runs a package's test binary again as a child process
// in a helper mode, for tests that need real processes: a writer killed
// with SIGKILL in the middle of a write, a lease holder stopped with
// SIGSTOP, several processes contending for one lock.
//
// The test binary's TestMain hands control to the helper when the mode
// variable is set, and runs the tests otherwise:
//
//	func TestMain(m *testing.M) {
//		proctest.Helper(modeEnv, runHelper) // returns only in the parent
//		leaktest.Main(m)
//	}
//
// A test starts a child with Start. The child reports on stdout, one line
// per event (one write(2) per line), and the parent reads those lines with
// a deadline (Next, WaitAcks): that, never a sleep, is how parent and
// child synchronise. The parent talks to the child through its stdin
// (Send; closing it with Stop or CloseStdin asks the child to finish) and
// signals (Kill sends SIGKILL and checks the child died of it).
//
// A child still running when its test ends is killed and reaped; its
// standard error is kept (bounded), shown when the test fails waiting for
// it, and a data race it reports fails the test.
//
// Process tests that draw random choices take their seed from Seed: fixed
// per test, so that a normal run makes the same choices every time and
// never passes or fails by the luck of a seed, and overridden from the
// environment to replay a failure or to soak over many seeds. EnvInt reads
// the counts (rounds, seeds) that soak runs raise.
package proctest
