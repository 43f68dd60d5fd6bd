package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a command's run with its arguments and the standard streams,
// under a context that an interrupt or SIGTERM cancels (a second one ends
// the process), and exits with the status run returns.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks the command to stop; a second one is the
	// default's, and ends the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
