// Package leaktest makes a package's tests fail when they leave a
// goroutine or a file descriptor behind. A package whose tests start
// goroutines or open files calls it from its TestMain:
//
//	func TestMain(m *testing.M) { leaktest.Main(m) }
//
// or, when TestMain has work of its own around the tests:
//
//	code := leaktest.Run(m)
//	cleanup()
//	os.Exit(code)
//
// Goroutines are checked with go.uber.org/goleak; descriptors by comparing
// /proc/self/fd before and after the tests (Linux only; elsewhere only
// goroutines are checked). The checks run only when the tests passed, so a
// failing test is not buried under the leaks its failure caused.
package leaktest
