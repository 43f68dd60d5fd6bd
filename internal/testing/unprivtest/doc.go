// Package unprivtest runs a package's permission and symlink tests again
// as an unprivileged user. CI runs as root, and root reads and writes
// whatever it likes, so a permission test that passes as root proves
// nothing; this package closes that gap.
//
// A wrapper test calls Run with a -test.run pattern and the names of the
// tests it must see pass. When the test process is root, Run copies the
// test binary into a world-readable temporary directory, creates a scratch
// directory owned by the unprivileged user, and runs the copy there as
// that user (uid and gid Nobody, or another uid given, with no
// supplementary groups) through exec.Cmd's SysProcAttr.Credential; the
// wrapper fails unless every named test passed in the child. When the
// test process is not root, the named tests have already run
// unprivileged in this very run, and Run says so and skips.
//
//	func TestPermissionsUnprivileged(t *testing.T) {
//		unprivtest.Run(t, unprivtest.Nobody, nil, "TestPermissions", "TestSymlinksRefused")
//	}
//
// Needs Linux or macOS, nothing else: no sudo, no extra users in
// /etc/passwd (the kernel accepts any uid from root).
package unprivtest
