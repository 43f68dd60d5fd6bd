package redact

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDefaultCompilesOnFirstUse: every store is opened with Default, and
// compiling the rules costs tens of milliseconds, so Default and Off
// compile nothing; the first string looked at does. It runs in a child
// process, where nothing has compiled the rules yet.
func TestDefaultCompilesOnFirstUse(t *testing.T) {
	if os.Getenv("REDACT_LAZY_CHILD") == "1" {
		r := Default()
		if r.Off() {
			t.Fatal("Default is off")
		}
		if compiled.Load() {
			t.Fatal("Default compiled the rules before it looked at a string")
		}
		out, n := r.String("key AKIA" + "Z7Q2R5T3W6Y4U2I7 here")
		if n != 1 || strings.Contains(out, "AKIA") {
			t.Fatalf("String = %q, %d", out, n)
		}
		if !compiled.Load() {
			t.Fatal("the rules ran without being compiled")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultCompilesOnFirstUse$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDACT_LAZY_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
