package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
)

// Options tune a Server. The zero value works for a unix socket; a TCP
// listener needs Token.
type Options struct {
	// Token is the bearer token TCP clients must send
	// ("Authorization: Bearer TOKEN"). It is never logged.
	Token string
	// Grace is how long a handle lives without a sign of life from its
	// client (a request naming it, or a heartbeat) before the server
	// releases its lease. Default 30s.
	Grace time.Duration
	// MaxBodyBytes bounds a request's body. Default: the store's default
	// record cap plus 1 MiB for the JSON around it.
	MaxBodyBytes int64
	// MaxConns bounds the connections open at once, watchers included;
	// past it a connection is answered 503 and closed. Default 128.
	MaxConns int
	// MaxHandles bounds the handles open at once; MaxHandlesPerClient
	// those of one client (a process on the unix socket; all TCP clients
	// together). Defaults 1024 and 64.
	MaxHandles          int
	MaxHandlesPerClient int
	// MaxWait bounds how long a resume may wait for a held lease.
	// Default 1 minute.
	MaxWait time.Duration
	// Logger receives a line per request (its route, never its
	// credentials or handles) and per refused connection; nil logs
	// nothing.
	Logger *slog.Logger
	// Hooks, for tests only, is called at named points of a write
	// (hook.go).
	Hooks func(point string)
}

func (o Options) withDefaults() Options {
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = sessionstore.DefaultMaxRecordBytes + 1<<20
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 128
	}
	if o.MaxHandles <= 0 {
		o.MaxHandles = 1024
	}
	if o.MaxHandlesPerClient <= 0 {
		o.MaxHandlesPerClient = 64
	}
	if o.MaxWait <= 0 {
		o.MaxWait = time.Minute
	}
	if o.Hooks == nil {
		o.Hooks = func(string) {}
	}
	return o
}

// Server serves a store over HTTP and JSON (API.md).
type Server struct {
	st      sessionstore.Store
	opts    Options
	handles *handles
	http    *http.Server
	uid     int

	connMu    sync.Mutex
	connSlots chan struct{}
	refusing  chan struct{}
	refusals  sync.WaitGroup // connections being refused (listener.refuse)

	ctx    context.Context // the server's life: watchers and the sweeper end with it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sweeper
}

// New returns a server of st. Serve it on listeners; Shutdown ends it.
func New(st sessionstore.Store, opts Options) *Server {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{st: st, opts: opts, handles: newHandles(opts.Grace, opts.MaxHandles, opts.MaxHandlesPerClient), uid: os.Getuid(), ctx: ctx, cancel: cancel}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*peerConn); ok {
				return context.WithValue(ctx, peerKey{}, pc.peer)
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(s.logger().Handler(), slog.LevelWarn),
	}
	s.wg.Go(func() { s.handles.sweep(ctx, s.releaseAll) })
	return s
}

func (s *Server) logger() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

// ServeUnix serves l, a unix socket: only processes of this process's
// user are served (their credentials come from the kernel). It returns
// when l fails or Shutdown is called (http.ErrServerClosed).
func (s *Server) ServeUnix(l net.Listener) error {
	return s.http.Serve(s.listener(l, true))
}

// ServeTCP serves l, a loopback TCP listener (ListenTCP): every request
// must carry the bearer token.
func (s *Server) ServeTCP(l net.Listener) error {
	if s.opts.Token == "" {
		return ErrNoToken
	}
	return s.http.Serve(s.listener(l, false))
}

// listener wraps l; every listener shares the connection slots.
func (s *Server) listener(l net.Listener, unix bool) *listener {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.connSlots == nil {
		s.connSlots = make(chan struct{}, s.opts.MaxConns)
		s.refusing = make(chan struct{}, maxRefusing)
	}
	return &listener{Listener: l, unix: unix, uid: s.uid, log: s.logger().Warn, slots: s.connSlots, refusing: s.refusing, wg: &s.refusals}
}

// Shutdown stops accepting, ends watchers, waits for requests in
// progress (until ctx is done: a write in progress finishes, and is
// answered), then releases every handle's lease.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	err := s.http.Shutdown(ctx)
	s.wg.Wait()
	s.refusals.Wait() // each ends within its deadline
	s.releaseAll(s.handles.all())
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		_ = s.http.Close()
	}
	return err
}

// Handles returns how many handles are open.
func (s *Server) Handles() int { return s.handles.count() }

// releaseAll releases the leases of ended handles.
func (s *Server) releaseAll(hs []*handle) {
	for _, h := range hs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.w.Release(ctx); err != nil && !errors.Is(err, sessionstore.ErrClosed) {
			s.logger().Warn("release a handle's lease", "session", h.w.ID(), "err", err)
		}
		cancel()
	}
}

// authorized checks a TCP request's bearer token (in constant time).
func (s *Server) authorized(r *http.Request) bool {
	p, _ := r.Context().Value(peerKey{}).(peer)
	if p.unix {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.opts.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

func clientOf(r *http.Request) string {
	p, _ := r.Context().Value(peerKey{}).(peer)
	return p.client()
}
