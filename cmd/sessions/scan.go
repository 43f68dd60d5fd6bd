package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

const scanDoc = `
Reports the secrets stored in sessions (all sessions when none is given):
API keys, tokens, private keys and the like, found by the rules that redact
what a store writes (--generic adds password assignments and high-entropy
strings). It reads every revision, archived ones included, the content
kept out of line, the copies a repair set aside (forensic/) and the retired
sessions' packs. Each secret is reported once per place: the session, the
first revision that holds it, the message, the part and the field, where it
is (log, archive, retired, forensic and the copy's name), its rule and the
short hash its placeholder would show; never the secret itself.
Exit status: 0 when none is found, 5 when some are, 1 when the scan failed.
'sessions redact ID' rewrites a session without them.`

// redactUsage is the --redact flag of the commands that write content.
const redactUsage = "which secrets to replace before writing: `default` (high-confidence formats), generic (also password assignments and high-entropy strings) or off"

// redactFlag registers --redact.
func (c *sub) redactFlag() { c.fs.StringVar(&c.redact, "redact", "", redactUsage) }

// redactor returns the Redactor of --redact (nil: the store's default).
func (c *sub) redactor() (*redact.Redactor, error) {
	switch c.redact {
	case "", "default":
		return nil, nil
	case "generic":
		return redact.New(redact.Options{Generic: true})
	case "off":
		return redact.New(redact.Options{Off: true})
	}
	return nil, fmt.Errorf("--redact %q: want default, generic or off", c.redact)
}

func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("scan", scanDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the findings as JSON lines")
	generic := c.fs.Bool("generic", false, "add the generic rules (more findings, more mistaken ones)")
	names, code, ok := c.parseIDs(args, 0)
	if !ok {
		return code
	}
	r, err := redact.New(redact.Options{Generic: *generic})
	if err != nil {
		return c.fail(err)
	}
	return c.withStore(ctx, func(st sessionstore.Store) int {
		// A name that names no live session is taken as an ID: the
		// store's scan reads retired sessions too, and says when there
		// is no such session.
		ids := make([]session.SessionID, 0, len(names))
		for _, n := range names {
			id, err := sessionstore.ResolveID(ctx, st, n)
			if errors.Is(err, sessionstore.ErrNotFound) {
				id, err = session.SessionID(n), nil
			}
			if err != nil {
				return c.fail(err)
			}
			ids = append(ids, id)
		}
		var rows [][]string
		n := 0
		for f, err := range sessionstore.Scan(ctx, st, r, ids...) {
			if err != nil {
				return c.fail(err)
			}
			n++
			if *asJSON {
				if err := json.NewEncoder(stdout).Encode(f); err != nil {
					return c.fail(err)
				}
				continue
			}
			msg := strconv.Itoa(f.Message)
			if f.Message < 0 {
				msg = "-"
			}
			rev := strconv.FormatUint(f.Revision, 10)
			if f.Revision == 0 {
				rev = "-"
			}
			where := f.Where
			if f.File != "" {
				where += " " + cli.Escape(f.File)
			}
			rows = append(rows, []string{cli.Escape(string(f.ID)), rev, msg, f.Part, f.Field, f.Rule, f.Hash, where})
		}
		if !*asJSON {
			if n == 0 {
				fmt.Fprintln(stdout, "no secrets found")
				return exitOK
			}
			if err := writeTable(stdout, []string{"ID", "REV", "MSG", "PART", "FIELD", "RULE", "HASH", "WHERE"}, rows, []bool{false, true, true}); err != nil {
				return c.fail(err)
			}
			fmt.Fprintf(stdout, "%d secrets found; 'sessions redact ID' rewrites a session without them\n", n)
		}
		if n > 0 {
			return cli.ExitSecrets
		}
		return exitOK
	})
}
