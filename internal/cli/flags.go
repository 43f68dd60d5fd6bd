package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Parse parses args with fs, flags and positional arguments in any order
// (a "--" ends the flags), and returns the positional arguments. Its
// errors are fs.Parse's (flag.ErrHelp after -h or --help).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// Duration is a flag.Value for a non-negative time.Duration that also
// takes whole days ("7d").
type Duration time.Duration

func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses "36h", "90m" or "7d".
func (d *Duration) Set(v string) error {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return fmt.Errorf("not a number of days: %q", v)
		}
		*d = Duration(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not a duration (like 36h, 90m or 7d): %q", v)
	}
	*d = Duration(t)
	return nil
}

// PrintFlags writes the flags of fs, but those in hidden, as a usage
// text's "Flags:" section lists them: each flag with its argument's name
// (the back-quoted word of its usage), then its usage and any default.
func PrintFlags(w io.Writer, fs *flag.FlagSet, hidden map[string]bool) {
	fmt.Fprintln(w, "Flags:")
	fs.VisitAll(func(f *flag.Flag) {
		if hidden[f.Name] {
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
