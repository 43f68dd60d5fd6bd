package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore/internal/testing/leaktest"
)

// Build compiles the main package in each of pkgDirs (relative to the
// working directory) into one temporary directory, named after the
// directories' base names, and returns that directory. The caller removes
// it.
func Build(pkgDirs ...string) (string, error) {
	dir, err := os.MkdirTemp("", "sessionstore-bin-")
	if err != nil {
		return "", err
	}
	gobin := "go" // go test puts its own GOROOT/bin first in PATH
	for _, pkg := range pkgDirs {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			_ = os.RemoveAll(dir) // best effort: the build already failed
			return "", err
		}
		out := filepath.Join(dir, filepath.Base(abs))
		if b, err := exec.Command(gobin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir) // best effort: the build already failed
			return "", fmt.Errorf("build %s: %w\n%s", pkg, err, b)
		}
	}
	return dir, nil
}

// Main is a TestMain body: it builds the commands in pkgDirs into a
// temporary directory, stores its path in *binDir, runs the tests with
// leak checks (leaktest.Run), removes the directory and exits.
func Main(m *testing.M, binDir *string, pkgDirs ...string) {
	os.Exit(RunTests(m, binDir, pkgDirs...))
}

// RunTests is Main without the exit: it returns the exit code.
func RunTests(m *testing.M, binDir *string, pkgDirs ...string) int {
	dir, err := Build(pkgDirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*binDir = dir
	code := leaktest.Run(m)
	_ = os.RemoveAll(dir) // best effort: a temp dir; the tests decided the exit code
	return code
}

// Result is what one run of a command printed and returned.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// String is the golden form: stdout, stderr if any, and the exit status.
func (r Result) String() string {
	s := r.Stdout
	if r.Stderr != "" {
		s += "--- stderr ---\n" + r.Stderr
	}
	return s + fmt.Sprintf("--- exit %d ---\n", r.Code)
}

// Context returns the context a command run by a test runs under: it
// ends shortly before the test binary's deadline (go test -timeout), so
// that a command that hangs fails its test with its output rather than
// the binary with a panic, and one that a loaded machine slows down is
// not cut short by a fixed limit. Without a deadline (-test.timeout 0) it
// ends after noDeadline.
func Context(t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			return context.WithDeadline(context.Background(), dl.Add(-deadlineMargin))
		}
	}
	return context.WithTimeout(context.Background(), noDeadline)
}

const (
	// deadlineMargin is how long before the test binary's deadline a
	// command is killed, leaving its test that time to report.
	deadlineMargin = 10 * time.Second
	// noDeadline bounds a command when the test binary has no deadline.
	noDeadline = 10 * time.Minute
)

// Run runs bin with args, a clean environment (CleanEnv) plus env, and
// stdout and stderr captured; it fails the test if the command cannot be
// started or runs until its Context ends.
func Run(t testing.TB, bin string, env []string, args ...string) Result {
	t.Helper()
	return RunIn(t, "", bin, env, args...)
}

// RunIn is Run in working directory dir ("" is this process's).
func RunIn(t testing.TB, dir, bin string, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := Context(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(CleanEnv(t), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s %v: %v", filepath.Base(bin), args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("run %s %v: killed as the test binary's deadline drew near (%v)\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, ctx.Err(), &stdout, &stderr)
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// CleanEnv is this process's environment without the variables that name
// a default store (SESSIONSTORE_DIR, XDG_DATA_HOME) and with HOME in a
// new temporary directory, so a command never touches the user's store.
func CleanEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SESSIONSTORE_DIR", "XDG_DATA_HOME", "HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+t.TempDir())
}

// InProcess runs a command's run function in this process (so the race
// detector sees it), as its main would.
func InProcess(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args ...string) Result {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}
