package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/compactcmd"
	"github.com/sessionstore/sessionstore/session"
)

// Exit statuses (internal/cli: the same for every command).
const (
	exitOK    = cli.ExitOK   // every session compacted or skipped
	exitFail  = cli.ExitFail // a session could not be compacted, or the store not opened
	exitUsage = cli.ExitUsage
)

const usageLine = "Usage: compact [--keep-last N] [--keep-since D] [--wait D] [--dry-run] [--json] [--dir ROOT] [ID...]"

func main() { cli.Main(run) }

// run is the command: flags, validation, a compaction per session, the
// report. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f compactcmd.Flags
	var dir string
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed below
	f.Register(fs)
	fs.StringVar(&dir, "dir", "", "the store `ROOT` (default: $SESSIONSTORE_DIR, else $XDG_DATA_HOME/sessionstore, else ~/.local/share/sessionstore)")
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\n%s\n\n", usageLine, compactcmd.Doc)
		cli.PrintFlags(w, fs, nil)
		fmt.Fprintf(w, "\n%s\n", cli.ExitStatusHelp)
	}
	usageError := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "compact: %s\n\n", fmt.Sprintf(format, args...))
		usage(stderr)
		return exitUsage
	}
	pos, err := cli.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return exitOK
	}
	if err != nil {
		return usageError("%v", err)
	}
	if _, err := f.Policy(); err != nil {
		return usageError("%v", err)
	}
	var ids []session.SessionID
	for _, p := range pos {
		id := session.SessionID(p)
		if err := sessionstore.ValidateID(id); err != nil {
			return usageError("%q is not a session ID: %v", p, err)
		}
		ids = append(ids, id)
	}
	root, err := cli.StoreDir(dir)
	if err != nil {
		return fail(stderr, err)
	}
	if cli.IsDSN(root) {
		return fail(stderr, fmt.Errorf("%s is a PostgreSQL store: compaction is for directory stores", cli.Location(root)))
	}
	st, err := cli.OpenDir(root, false, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	defer func() { _ = st.Close() }() // releases the root handle only: each compaction was durable when it returned
	return compactcmd.Run(ctx, st, ids, f, stdout, stderr)
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "compact: %v\n", err)
	return exitFail
}
