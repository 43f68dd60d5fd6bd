package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// warnUnreadable prints a warning on stderr for each session a store-wide
// operation could not read: such a session is reported, never left out
// silently, and the command goes on with the others.
func (c *sub) warnUnreadable(us []summary.Unreadable) {
	for _, u := range us {
		fmt.Fprintf(c.stderr, "sessions %s: warning: %s\n", c.name, unreadableText(u))
	}
}

// unreadableText describes an unreadable session on one line.
func unreadableText(u summary.Unreadable) string {
	return fmt.Sprintf("session %s cannot be read: %s", cli.Escape(string(u.ID)), cli.Escape(oneLine(u.Reason)))
}

// printUnreadable writes a line per unreadable session into a report.
func printUnreadable(w io.Writer, us []summary.Unreadable) {
	for _, u := range us {
		fmt.Fprintf(w, "%s: UNREADABLE: %s\n", cli.Escape(string(u.ID)), cli.Escape(oneLine(u.Reason)))
	}
}

// noLogHint says the way out for session id when its log is missing or
// unusable (jsonlstore.ErrNoLog): nothing in the store can bring its
// records back.
func noLogHint(err error, id session.SessionID) error {
	return fmt.Errorf("%w; nothing was changed: restore %s/%s from a backup, or remove the directory yourself", err, id, jsonlstore.LogFile)
}

// oneLine folds the white space of s, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
