package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sessionstore/sessionstore/internal/cli"
)

// Exit statuses, the same for every command (cli.ExitStatusHelp).
const (
	exitOK      = cli.ExitOK
	exitFail    = cli.ExitFail
	exitUsage   = cli.ExitUsage
	exitCorrupt = cli.ExitCorrupt
	exitNewer   = cli.ExitNewer
)

// command is one subcommand.
type command struct {
	name    string
	usage   string // after "sessions NAME"
	summary string // one line, for `sessions help`
	hidden  bool   // internal (demo-agent): not listed
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands map[string]*command

func init() {
	commands = map[string]*command{}
	for _, c := range []*command{
		{name: "ls", usage: "[--state S] [--kind K] [--label K=V] [--project DIR | --here] [--limit N] [--page N | --all | --cursor C] [--json] | --retired", summary: "list sessions, most recently updated first", run: cmdLs},
		{name: "show", usage: "ID [--rev N] [--format json|markdown|text] [--ids]", summary: "print a session's snapshot as JSON, or its conversation to read", run: cmdShow},
		{name: "log", usage: "ID [--json]", summary: "list a session's revisions: generation, time, kind, size", run: cmdLog},
		{name: "lease", usage: "ID [--json]", summary: "who holds a session's lease, and what to do about a stuck one", run: cmdLease},
		{name: "watch", usage: "[--state S] [--kind K] [--label K=V] [--project DIR | --here] [--limit N]", summary: "a live table of sessions (Ctrl-C to stop)", run: cmdWatch},
		{name: "verify", usage: "[ID...] [--json] [--quiet] [--retired]", summary: "check every record; exit 0 sound, 3 corrupt, 4 a newer version's", run: cmdVerify},
		{name: "repair", usage: "ID [--truncate-at-corruption] [--wait D] [--json]", summary: "recover a session, and cut its log at corruption if asked", run: cmdRepair},
		{name: "rm", usage: "ID... [--wait D] | --retired ID...", summary: "delete sessions (refuses one that is held, unless --wait), or retired ones", run: cmdRm},
		{name: "redact", usage: redactCmdUsage, summary: "rewrite sessions' stored history with their secrets replaced (see scan)", run: cmdRedact},
		{name: "retire", usage: retireUsage, summary: "move idle sessions into the store's retired area (compressed; restorable)", run: cmdRetire},
		{name: "restore", usage: "ID... [--json]", summary: "bring retired sessions back, byte for byte", run: cmdRestore},
		{name: "du", usage: "[ID...] [--json] [--bytes]", summary: "disk usage per session: log, archives, forensic, other", run: cmdDu},
		{name: "backup", usage: "DEST [ID...] [--delete] [--json]", summary: "a consistent, verified copy of sessions into the store at DEST, incremental", run: cmdBackup},
		{name: "sync", usage: "[A] B [--json]", summary: "bring two stores to the union of their sessions; diverged ones become forks", run: cmdSync},
		{name: "compact", usage: compactUsage, summary: "trim old revisions into verified archives (as the compact command does)", run: cmdCompact},
		{name: "import", usage: importUsage, summary: "import Claude Code or Codex sessions (again: only what changed)", run: cmdImport},
		{name: "export", usage: exportUsage, summary: "a session's latest snapshot, its records, every revision, or a Claude Code or Codex file", run: cmdExport},
		{name: "migrate", usage: migrateUsage, summary: "copy every session between a directory and PostgreSQL, verbatim, then verify", run: cmdMigrate},
		{name: "search", usage: "TEXT... [--label K=V] [--project DIR | --here] [--no-tools] [--limit N] [--retired] [--json]", summary: "find the sessions and messages where words were said", run: cmdSearch},
		{name: "scan", usage: "[ID...] [--generic] [--json]", summary: "report the secrets stored in sessions, never printing them; exit 5 when some are", run: cmdScan},
		{name: "reindex", usage: "[--json]", summary: "rebuild the store's indexes (the catalog and the search index) from the records", run: cmdReindex},
		{name: "new", usage: "[--id ID] [--title T] [--label K=V] [--project DIR | --here]", summary: "create an empty session and print its ID", run: cmdNew},
		{name: "append", usage: "ID [--wait D] < messages.jsonl", summary: "append messages (JSON lines on stdin) to a session", run: cmdAppend},
		{name: "rewind", usage: "ID --to-message K|MSGID [--wait D]", summary: "go back to a message in place: a new revision, the older ones kept", run: cmdRewind},
		{name: "fork", usage: "ID [--at-message K|MSGID] [--id NEWID]", summary: "a new session from a session's conversation up to a message", run: cmdFork},
		{name: "label", usage: "ID KEY=VALUE... [--rm KEY] [--wait D]", summary: "set and remove a session's labels", run: cmdLabel},
		{name: "mcp", usage: "", summary: "serve the store's history to a coding agent over MCP (stdio): search, list, read", run: cmdMCP},
		{name: "serve", usage: "[--socket PATH] [--tcp ADDR --token-file FILE] [--grace D] [--redact default|generic|off] [--verbose]", summary: "serve the store to agents in any language over HTTP (API.md)", run: cmdServe},
		{name: "demo", usage: "", summary: "run a simulated multi-agent workload, with a crash and a takeover", run: cmdDemo},
		{name: "demo-agent", usage: "--id ID ...", summary: "one agent process of the demo", hidden: true, run: cmdDemoAgent},
	} {
		commands[c.name] = c
	}
}

func main() { cli.Main(run) }

// run parses the global flags (--dir), then runs the subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var dir string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch {
		case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
			printHelp(stdout)
			return exitOK
		case name == "dir" && hasValue:
			dir, args = value, args[1:]
		case name == "dir" && len(args) > 1:
			dir, args = args[1], args[2:]
		case name == "dir":
			fmt.Fprintln(stderr, "sessions: --dir needs a directory")
			return exitUsage
		default:
			fmt.Fprintf(stderr, "sessions: unknown global flag %s (flags of a subcommand go after it)\n", args[0])
			return exitUsage
		}
	}
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		if len(rest) == 0 {
			printHelp(stdout)
			return exitOK
		}
		c, ok := commands[rest[0]]
		if !ok {
			fmt.Fprintf(stderr, "sessions: unknown command %q\n", rest[0])
			return exitUsage
		}
		return c.run(ctx, []string{"--help"}, stdout, stderr)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "sessions: unknown command %q; run 'sessions help'\n", name)
		return exitUsage
	}
	if dir != "" {
		// The subcommand's own --dir, given after it, wins: it comes later.
		rest = append([]string{"--dir", dir}, rest...)
	}
	return c.run(ctx, rest, stdout, stderr)
}

func printHelp(out io.Writer) {
	w := new(strings.Builder) // the page, wrapped to 80 columns when done
	defer func() { _, _ = io.WriteString(out, cli.Wrap(w.String(), cli.HelpWidth)) }()
	fmt.Fprint(w, `sessions — inspect and maintain a sessionstore store

Usage:
  sessions [--dir DIR] COMMAND [ARGS] [FLAGS]

Commands:
`)
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, `
The store is --dir DIR (before or after the command), else $SESSIONSTORE_DIR,
else $XDG_DATA_HOME/sessionstore, else ~/.local/share/sessionstore. A
postgres:// URL in its place names a PostgreSQL store; every command but
repair, backup, compact and demo works on either. Only demo, import and new
create a missing store. A session is named by its ID or a unique prefix of it, in either case.

%s

Run 'sessions COMMAND --help' (or 'sessions help COMMAND') for a command's flags.
`, cli.ExitStatusHelp)
}
