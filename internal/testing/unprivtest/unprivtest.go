package unprivtest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nobody is the uid and gid the unprivileged pass runs as (Debian's
// nobody/nogroup). Other is a second unprivileged uid for tests that need
// two users; neither needs an entry in /etc/passwd.
const (
	Nobody = 65534
	Other  = 65533
)

// childEnv marks a child process run by Run; its value is the uid.
const childEnv = "SESSIONSTORE_UNPRIVILEGED_UID"

// Child reports whether this process is a child started by Run.
func Child() bool { return os.Getenv(childEnv) != "" }

// Root reports whether the test process is root and not such a child: a
// process that can and must run the unprivileged pass.
func Root() bool { return os.Geteuid() == 0 && !Child() }

// childTimeout bounds one child run.
const childTimeout = 5 * time.Minute

// Run runs the tests of this test binary called names, as uid and with
// the extra environment env, and fails t unless each of them passed
// there. The child's working directory, HOME and TMPDIR are a scratch
// directory owned by uid, which Run returns. Run skips when the process
// is not root (the tests ran unprivileged already) and inside a child.
func Run(t *testing.T, uid int, env []string, names ...string) string {
	t.Helper()
	if Child() {
		t.Skip("unprivtest: already the unprivileged child")
	}
	if os.Geteuid() != 0 {
		t.Skipf("unprivtest: not root (uid %d): %s ran unprivileged in this run", os.Geteuid(), strings.Join(names, ", "))
	}
	if len(names) == 0 {
		t.Fatal("unprivtest: no test names")
	}
	base := worldTraversableTemp(t)
	bin := copyBinary(t, base)
	scratch := Scratch(t, base, uid)

	pattern := "^(" + strings.Join(quoteAll(names), "|") + ")$"
	cmd := exec.Command(bin, "-test.run", pattern, "-test.v", "-test.count=1", "-test.timeout", childTimeout.String())
	cmd.Dir = scratch
	cmd.Env = append(cleanEnv(), append(env,
		childEnv+"="+fmt.Sprint(uid),
		"TMPDIR="+scratch,
		"HOME="+scratch,
	)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivtest: tests as uid %d failed: %v\n%s", uid, err, out)
	}
	for _, name := range names {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(name) + ` `).Match(out) {
			t.Fatalf("unprivtest: %s did not pass as uid %d (skipped or not run):\n%s", name, uid, out)
		}
	}
	t.Logf("as uid %d: %s passed", uid, strings.Join(names, ", "))
	return scratch
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return q
}

// cleanEnv is the environment for a child: this process's, minus the
// variables that point into root's home (caches the child cannot use).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "TMPDIR", "GOCACHE", "GOTMPDIR", "GOCOVERDIR", childEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// worldTraversableTemp returns a new directory, removed when t ends, that
// every user can traverse (0755 in a world-traversable parent): under
// os.TempDir() when its ancestors allow that, else under /tmp.
func worldTraversableTemp(t *testing.T) string {
	t.Helper()
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		if !traversableByAll(parent) {
			continue
		}
		dir, err := os.MkdirTemp(parent, "unprivtest-") //nolint:usetesting // t.TempDir may sit below a directory the unprivileged user cannot traverse
		if err != nil {
			t.Fatalf("unprivtest: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a temp dir
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatalf("unprivtest: %v", err)
		}
		return dir
	}
	t.Fatalf("unprivtest: neither %s nor /tmp can be traversed by other users; set TMPDIR to a directory they can reach", os.TempDir())
	return ""
}

// traversableByAll reports whether others may search dir and each of its
// ancestors.
func traversableByAll(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// copyBinary copies the running test binary into dir as a 0755 file
// (the original may sit under root's 0700 build cache).
func copyBinary(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("unprivtest: %v", err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatalf("unprivtest: %v", err)
	}
	defer func() { _ = src.Close() }() // read-only
	bin := filepath.Join(dir, filepath.Base(self))
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatalf("unprivtest: %v", err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("unprivtest: copy test binary: %v", err)
	}
	return bin
}

// Scratch creates a 0700 directory in base owned by uid and gid uid.
func Scratch(t *testing.T, base string, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp(base, fmt.Sprintf("uid%d-", uid)) //nolint:usetesting // base is a directory the other user can traverse, not t.TempDir
	if err != nil {
		t.Fatalf("unprivtest: %v", err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatalf("unprivtest: chown scratch to %d: %v", uid, err)
	}
	return dir
}

// OwnedDir returns a new directory owned by uid (and gid uid), mode 0755,
// in a world-traversable parent, removed when t ends: where one user's
// child creates files that another user's child then tries to read. Only
// root can call it.
func OwnedDir(t *testing.T, uid int) string {
	t.Helper()
	dir := Scratch(t, worldTraversableTemp(t), uid)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("unprivtest: %v", err)
	}
	return dir
}
