package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// peer is who is at the other end of a connection: a process of a user
// (on the unix socket, from the kernel) or a TCP client that must show
// the token.
type peer struct {
	unix bool
	uid  int
	pid  int // 0 where the kernel does not say
}

// client names the peer for the per-client handle limit: a process on
// the unix socket, every TCP client alike.
func (p peer) client() string {
	if !p.unix {
		return "tcp"
	}
	return fmt.Sprintf("uid %d pid %d", p.uid, p.pid)
}

type peerKey struct{}

// peerConn is an accepted connection and its peer.
type peerConn struct {
	net.Conn
	peer peer
	once sync.Once
	done func()
}

func (c *peerConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}

// listener accepts connections up to a limit, checks the unix socket's
// peers are this process's user, and remembers each connection's peer.
type listener struct {
	net.Listener
	unix bool
	uid  int
	log  func(msg string, args ...any)

	slots    chan struct{}   // one per connection open
	refusing chan struct{}   // one per connection being refused
	wg       *sync.WaitGroup // the refusing goroutines
}

// maxRefusing bounds the connections being refused at once; past it a
// connection to refuse is closed without an answer.
const maxRefusing = 16

// refuse answers a connection the server will not serve with a complete
// HTTP response saying why, so that any client shows the reason, and
// closes it. It reads the request first (within a second, its body up to
// 64 KiB), as a client writes its request before it reads: an answer
// before that, or a close with the request unread, reaches the client as
// a broken pipe or a reset instead of the reason. It runs on a goroutine
// of its own (the server's refusing group), so that a slow client never
// holds up the accept loop.
func (l *listener) refuse(c net.Conn, status string, msg string) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	l.wg.Go(func() {
		defer func() { <-l.refusing }()
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, 64<<10))); err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
		body := fmt.Sprintf(`{"error":%q,"code":"refused"}`+"\n", msg)
		_, _ = fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, len(body), body)
	})
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p := peer{}
		if l.unix {
			uc, ok := c.(*net.UnixConn)
			if !ok {
				_ = c.Close()
				continue
			}
			p, err = peerOf(uc)
			if err != nil {
				l.log("refused a connection whose peer is unknown", "err", err)
				l.refuse(c, "403 Forbidden", "server: the peer's credentials cannot be read: "+err.Error())
				continue
			}
			if p.uid != l.uid {
				l.log("refused another user's connection", "uid", p.uid, "pid", p.pid)
				l.refuse(c, "403 Forbidden", fmt.Sprintf("server: this server serves uid %d only; the connecting process (pid %d) runs as uid %d", l.uid, p.pid, p.uid))
				continue
			}
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.log("refused a connection: too many open", "limit", cap(l.slots))
			l.refuse(c, "503 Service Unavailable", fmt.Sprintf("server: too many connections (at most %d); close idle ones and retry", cap(l.slots)))
			continue
		}
		return &peerConn{Conn: c, peer: p, done: func() { <-l.slots }}, nil
	}
}

// DefaultSocket returns where the server listens when no socket is
// given, for the store at loc (a directory or a DSN): in
// $XDG_RUNTIME_DIR (a directory only its user may enter) when it is
// set, named after the store so that servers of different stores do not
// meet; else in the store's directory. A PostgreSQL store without
// $XDG_RUNTIME_DIR has no default.
func DefaultSocket(loc string, dsn bool) (string, error) {
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		sum := sha256.Sum256([]byte(loc))
		return filepath.Join(rt, "sessionstore-"+hex.EncodeToString(sum[:6])+".sock"), nil
	}
	if dsn {
		return "", errors.New("server: a PostgreSQL store's server needs --socket PATH (or $XDG_RUNTIME_DIR)")
	}
	return filepath.Join(loc, ".sessions-serve.sock"), nil
}

// ListenUnix listens on the unix socket at path, of mode 0600. A socket
// file nobody listens on (left by a server that died) is replaced; one a
// server answers on is ErrListening.
func ListenUnix(ctx context.Context, path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil { //nolint:gosec // G703: the socket path is the operator's (--socket) or DefaultSocket's, not a client's
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("server: %s exists and is not a socket", path)
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%w: %s", ErrListening, path)
		}
		if err := os.Remove(path); err != nil { //nolint:gosec // G703: the socket path is the operator's (--socket) or DefaultSocket's, not a client's
			return nil, fmt.Errorf("server: remove the stale socket: %w", err)
		}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	ul := l.(*net.UnixListener)
	// Between bind and chmod the socket has the umask's mode; the peer
	// check refuses other users' connections in that window as always.
	if err := os.Chmod(path, 0o600); err != nil { //nolint:gosec // G703: the socket path is the operator's (--socket) or DefaultSocket's, not a client's
		_ = ul.Close()
		return nil, fmt.Errorf("server: chmod the socket: %w", err)
	}
	return ul, nil
}

// ListenTCP listens on addr, which must be a loopback address.
func ListenTCP(ctx context.Context, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server: tcp address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("server: tcp address %q is not a loopback address (127.0.0.1, ::1, localhost): the server is for this machine only", addr)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	if a, ok := l.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		_ = l.Close()
		return nil, fmt.Errorf("server: %q resolved to %s, not a loopback address", addr, l.Addr())
	}
	return l, nil
}
