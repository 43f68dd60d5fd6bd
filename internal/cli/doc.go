// Package cli holds what the repository's commands (sessions, compact)
// share: where the store is and how to name it in messages, the exit
// statuses, flag parsing with flags and arguments in any order, and
// output for people — text made safe for a terminal, widths by display
// cells, tables that fit the terminal, colors where they help.
//
//	dir, err := cli.StoreDir(flagDir)          // --dir, else the default store
//	fmt.Fprintln(w, cli.Location(dsn))         // a DSN without its password
//	t := cli.Table{Columns: cols, Rows: rows}
//	t.Write(w, cli.TerminalWidth(w), cli.NewPalette(w))
package cli
