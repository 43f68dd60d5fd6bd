package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// buildSessions builds the sessions command into dir, from the source of
// the module this harness measures (bench's replace directive), and
// returns the binary's path.
func buildSessions(dir string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/sessionstore/sessionstore").Output()
	if err != nil {
		return "", fmt.Errorf("find the module's source: %w", err)
	}
	src := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "sessions")
	cmd := exec.Command("go", "build", "-C", src, "-o", bin, "./cmd/sessions") //nolint:gosec // G204: the module's own source and a path under the run's directory
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build sessions: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	return bin, nil
}

// execResult is what a command printed, and how long it ran from start to
// exit as this process saw it.
type execResult struct {
	stdout, stderr string
	wall           time.Duration
}

// execTimed runs bin with args (and a clean environment for the store:
// no SESSIONSTORE_DIR) to exit.
func execTimed(bin string, args ...string) (execResult, error) {
	cmd := exec.Command(bin, args...) //nolint:gosec // G204: the sessions binary this run built
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SESSIONSTORE_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	res := execResult{stdout: out.String(), stderr: errb.String(), wall: time.Since(start)}
	if err != nil {
		return res, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(res.stderr))
	}
	return res, nil
}
