package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/session"
)

// sub is what every subcommand starts with: its flag set (with the common
// --dir flag), its usage text, and the writers.
type sub struct {
	name   string
	fs     *flag.FlagSet
	dir    string
	hidden map[string]bool
	doc    string // what the command does, for --help
	stdout io.Writer
	stderr io.Writer
	// redact is the --redact flag's value, for the commands that write
	// content (redactFlag); empty: the store's default rules.
	redact string
}

func newSub(name, doc string, stdout, stderr io.Writer) *sub {
	c := &sub{name: name, doc: doc, stdout: stdout, stderr: stderr, hidden: map[string]bool{}}
	c.fs = flag.NewFlagSet("sessions "+name, flag.ContinueOnError)
	c.fs.SetOutput(io.Discard) // errors and usage are printed by parse
	c.fs.StringVar(&c.dir, "dir", "", "the store `directory` (default: $SESSIONSTORE_DIR, else the XDG data directory)")
	return c
}

// hide keeps a flag out of --help (flags for tests and internal use).
func (c *sub) hide(names ...string) {
	for _, n := range names {
		c.hidden[n] = true
	}
}

// parse parses args, flags and positional arguments in any order (a "--"
// ends the flags). It returns the positional arguments, or an exit status
// when the command should stop: 0 after --help, exitUsage after an error.
func (c *sub) parse(args []string, minPos, maxPos int) ([]string, int, bool) {
	pos, err := cli.Parse(c.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.usage(c.stdout)
		return nil, exitOK, false
	}
	if err != nil {
		return nil, c.usageError("%v", err), false
	}
	switch {
	case len(pos) < minPos:
		return nil, c.usageError("missing argument"), false
	case maxPos >= 0 && len(pos) > maxPos:
		return nil, c.usageError("unexpected argument %q", pos[maxPos]), false
	}
	return pos, 0, true
}

// parseID parses the flags of a command that takes exactly one session
// (its ID, or a unique prefix of it) and checks the name; when ok is false
// the command returns code.
func (c *sub) parseID(args []string) (string, int, bool) {
	pos, code, ok := c.parse(args, 1, 1)
	if !ok {
		return "", code, false
	}
	if err := checkNames(pos); err != nil {
		return "", c.usageError("%v", err), false
	}
	return pos[0], exitOK, true
}

// parseIDs is parseID for a command that takes any number of sessions
// after minPos other arguments.
func (c *sub) parseIDs(args []string, minPos int) ([]string, int, bool) {
	pos, code, ok := c.parse(args, minPos, -1)
	if !ok {
		return nil, code, false
	}
	if err := checkNames(pos[minPos:]); err != nil {
		return nil, c.usageError("%v", err), false
	}
	return pos, exitOK, true
}

// usageError prints a usage error and returns exitUsage.
func (c *sub) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sessions %s: %s\n", c.name, cli.Escape(errorText(fmt.Errorf(format, args...))))
	fmt.Fprintf(c.stderr, "Run 'sessions %s --help' for usage.\n", c.name)
	return exitUsage
}

// fail prints an error and returns exitFail. Each line of the message is
// escaped: errors quote labels and names that other programs wrote.
func (c *sub) fail(err error) int {
	lines := strings.Split(errorText(err), "\n")
	for i, l := range lines {
		lines[i] = cli.Escape(l)
	}
	fmt.Fprintf(c.stderr, "sessions %s: %s\n", c.name, strings.Join(lines, "\n"))
	return exitFail
}

func (c *sub) usage(w io.Writer) {
	cmd := commands[c.name]
	var page strings.Builder
	fmt.Fprintf(&page, "Usage: sessions %s %s\n\n%s\n\n", c.name, cmd.usage, strings.TrimSpace(c.doc))
	cli.PrintFlags(&page, c.fs, c.hidden)
	_, _ = io.WriteString(w, cli.Wrap(page.String(), cli.HelpWidth)) // help: nothing to do about a failed write
}

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// labelFlag collects repeatable key=value labels. A key given twice must
// have one value: a session carries one value a key.
type labelFlag struct{ m map[string]string }

func (l *labelFlag) String() string {
	keys := make([]string, 0, len(l.m))
	for k := range l.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + l.m[k]
	}
	return strings.Join(keys, ",")
}

func (l *labelFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("not key=value: %q", v)
	}
	if err := session.ValidateLabel(k, val); err != nil {
		return err
	}
	if old, dup := l.m[k]; dup && old != val {
		return fmt.Errorf("label %q given twice, as %q and %q", k, old, val)
	}
	if l.m == nil {
		l.m = map[string]string{}
	}
	l.m[k] = val
	return nil
}

// timeFlag parses an RFC 3339 time.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 time: %q", v)
	}
	f.t = t
	return nil
}
