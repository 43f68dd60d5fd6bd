package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/session"
)

// cli is what every subcommand starts with: its flag set (with the common
// --dir flag), its usage text, and the writers.
type cli struct {
	name   string
	fs     *flag.FlagSet
	dir    string
	hidden map[string]bool
	doc    string // what the command does, for --help
	stdout io.Writer
	stderr io.Writer
}

func newCLI(name, doc string, stdout, stderr io.Writer) *cli {
	c := &cli{name: name, doc: doc, stdout: stdout, stderr: stderr, hidden: map[string]bool{}}
	c.fs = flag.NewFlagSet("sessions "+name, flag.ContinueOnError)
	c.fs.SetOutput(io.Discard) // errors and usage are printed by parse
	c.fs.StringVar(&c.dir, "dir", "", "the store `directory` (default: $SESSIONSTORE_DIR, else the XDG data directory)")
	return c
}

// hide keeps a flag out of --help (flags for tests and internal use).
func (c *cli) hide(names ...string) {
	for _, n := range names {
		c.hidden[n] = true
	}
}

// parse parses args, flags and positional arguments in any order (a "--"
// ends the flags). It returns the positional arguments, or an exit status
// when the command should stop: 0 after --help, exitUsage after an error.
func (c *cli) parse(args []string, minPos, maxPos int) ([]string, int, bool) {
	var pos []string
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.usage(c.stdout)
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.usageError("%v", err), false
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	switch {
	case len(pos) < minPos:
		return nil, c.usageError("missing argument"), false
	case maxPos >= 0 && len(pos) > maxPos:
		return nil, c.usageError("unexpected argument %q", pos[maxPos]), false
	}
	return pos, 0, true
}

// usageError prints a usage error and returns exitUsage.
// parseID parses the flags of a command that takes exactly one session
// ID and validates it; when ok is false the command returns code.
func (c *cli) parseID(args []string) (session.SessionID, int, bool) {
	pos, code, ok := c.parse(args, 1, 1)
	if !ok {
		return "", code, false
	}
	id, err := sessionID(pos[0])
	if err != nil {
		return "", c.usageError("%v", err), false
	}
	return id, exitOK, true
}

func (c *cli) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sessions %s: %s\n", c.name, fmt.Sprintf(format, args...))
	fmt.Fprintf(c.stderr, "Run 'sessions %s --help' for usage.\n", c.name)
	return exitUsage
}

// fail prints an error and returns exitFail.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "sessions %s: %v\n", c.name, err)
	return exitFail
}

func (c *cli) usage(w io.Writer) {
	cmd := commands[c.name]
	fmt.Fprintf(w, "Usage: sessions %s %s\n\n%s\n", c.name, cmd.usage, strings.TrimSpace(c.doc))
	fmt.Fprintln(w, "\nFlags:")
	c.fs.VisitAll(func(f *flag.Flag) {
		if c.hidden[f.Name] {
			return
		}
		typ, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		switch f.DefValue {
		case "", "false", "0", "0s":
		default:
			help += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, help)
	})
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
