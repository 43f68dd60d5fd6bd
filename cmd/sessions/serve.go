package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/cli"
	"github.com/sessionstore/sessionstore/internal/server"
)

const serveDoc = `
Serves the store to agents in any language over HTTP and JSON (API.md): on
a unix socket of mode 0600 that only your user's processes may use (the
kernel says who connects), and with --tcp on a loopback address where every
request carries the bearer token kept in --token-file (created, mode 0600,
when missing; never printed or logged). The socket is --socket PATH, else
$XDG_RUNTIME_DIR/sessionstore-HASH.sock (HASH names the store), else
.sessions-serve.sock in the store's directory; the first line printed says
where. Clients hold a session through a handle, which holds its lease: a
Go agent holding the session and a handle exclude each other. A handle
whose client shows no sign of life for --grace is ended and its lease
released. It runs until interrupted (SIGINT, SIGTERM), then releases every
lease it holds.`

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("serve", serveDoc, stdout, stderr)
	socket := c.fs.String("socket", "", "the unix socket's `path`")
	tcp := c.fs.String("tcp", "", "also listen on this loopback `address` (127.0.0.1:PORT), with --token-file")
	tokenFile := c.fs.String("token-file", "", "the `file` holding the TCP bearer token (created when missing)")
	grace := c.fs.Duration("grace", 30*time.Second, "end a handle whose client is silent this `long`, releasing its lease")
	maxConns := c.fs.Int("max-conns", 128, "the most connections open at once")
	maxHandles := c.fs.Int("max-handles", 1024, "the most handles open at once")
	perClient := c.fs.Int("max-handles-per-client", 64, "the most handles one client process holds")
	maxBody := c.fs.Int64("max-body", 0, "the largest request body in `bytes` (default: the record cap plus 1 MiB)")
	c.redactFlag()
	verbose := c.fs.Bool("verbose", false, "log every request (its route and status; never a token or handle)")
	if _, code, ok := c.parse(args, 0, 0); !ok {
		return code
	}
	if *tcp != "" && *tokenFile == "" {
		return c.usageError("--tcp needs --token-file (the bearer token's file)")
	}
	if *grace <= 0 || *maxConns <= 0 || *maxHandles <= 0 || *perClient <= 0 || *maxBody < 0 {
		return c.usageError("--grace, --max-conns, --max-handles and --max-handles-per-client must be positive")
	}
	loc, err := c.store()
	if err != nil {
		return c.fail(err)
	}
	path := *socket
	if path == "" {
		if path, err = server.DefaultSocket(loc, cli.IsDSN(loc)); err != nil {
			return c.fail(err)
		}
	}
	var token string
	if *tcp != "" {
		if token, err = loadToken(*tokenFile); err != nil {
			return c.fail(err)
		}
	}
	st, err := c.open(ctx, false)
	if err != nil {
		return c.fail(err)
	}
	defer func() { _ = st.Close() }() // after Shutdown released every handle
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	srv := server.New(st, server.Options{
		Token: token, Grace: *grace, MaxConns: *maxConns, MaxHandles: *maxHandles, MaxHandlesPerClient: *perClient,
		MaxBodyBytes: *maxBody, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	ul, err := server.ListenUnix(ctx, path)
	if err != nil {
		_ = srv.Shutdown(ctx)
		return c.fail(err)
	}
	defer func() { _ = os.Remove(path) }() // the socket goes with the server
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeUnix(ul) }()
	fmt.Fprintf(stdout, "listening on unix:%s\n", path)
	if *tcp != "" {
		tl, err := server.ListenTCP(ctx, *tcp)
		if err != nil {
			_ = srv.Shutdown(ctx)
			return c.fail(err)
		}
		go func() { errc <- srv.ServeTCP(tl) }()
		fmt.Fprintf(stdout, "listening on http://%s (bearer token in %s)\n", tl.Addr(), *tokenFile)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && serveErr == nil {
		serveErr = err
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return c.fail(serveErr)
	}
	return exitOK
}

// loadToken reads the bearer token from path, or makes one and writes it
// there (mode 0600) when the file does not exist.
func loadToken(path string) (string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the token file is the one the operator names with --token-file
	if errors.Is(err, fs.ErrNotExist) {
		var raw [32]byte
		_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
		token := hex.EncodeToString(raw[:])
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: the token file is the one the operator names with --token-file
		if err != nil {
			return "", fmt.Errorf("create the token file: %w", err)
		}
		_, err = f.WriteString(token + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("write the token file: %w", err)
		}
		return token, nil
	}
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", fmt.Errorf("the token in %s is %d characters; at least 16 are needed", path, len(token))
	}
	return token, nil
}
