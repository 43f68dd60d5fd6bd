package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	// DSNEnv names an existing server to use instead of a throwaway
	// cluster; its user must be allowed to create databases.
	DSNEnv = "PGSTORE_TEST_DSN"
	// RequireEnv, set to 1, makes a server that cannot be started a test
	// failure instead of a skip.
	RequireEnv = "PGSTORE_REQUIRE"
)

// Server is a PostgreSQL server for tests.
type Server struct {
	// DSN connects to its maintenance database as a user who may create
	// databases.
	DSN string

	dir     string // the throwaway cluster's directory; "" for PGSTORE_TEST_DSN
	cred    *syscall.Credential
	bin     string
	durable bool

	mu        sync.Mutex
	templates map[string]*template
}

// template is a database made once per binary and copied for each test.
type template struct {
	once sync.Once
	name string
	err  error
}

// The binary's server, started by the first Get; startErr says why there
// is none.
var (
	startOnce sync.Once
	server    *Server
	startErr  error
	mainRan   bool
)

// Main runs the tests, then stops the server if a test started it; it
// returns the exit code for os.Exit. A binary whose tests (or whose -run
// selection) use no database starts no server.
func Main(m *testing.M) int { return Run(m.Run) }

// Run is Main for a TestMain that runs its tests through a wrapper (such
// as leaktest.Run): it calls tests, then stops the server if a test
// started it, and returns tests' exit code.
func Run(tests func() int) int {
	mainRan = true
	code := tests()
	startOnce.Do(func() {}) // no server may start after this
	if server != nil {
		if err := server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	return code
}

// Get returns the binary's server, starting it on first use, or skips
// (fails, with PGSTORE_REQUIRE=1) tb when there is none.
func Get(tb testing.TB) *Server {
	tb.Helper()
	startOnce.Do(func() {
		if !mainRan {
			startErr = errors.New("the test binary's TestMain does not call pgtest.Main (which stops the server)")
			return
		}
		server, startErr = Start()
	})
	if server == nil {
		why := "pgtest.Main has returned"
		if startErr != nil {
			why = startErr.Error()
		}
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("no PostgreSQL server (%s=1): %s", RequireEnv, why)
		}
		tb.Skipf("no PostgreSQL server: %s (set %s, or install PostgreSQL)", why, DSNEnv)
	}
	return server
}

// NewDatabase creates an empty database on the binary's server and returns
// its DSN; the database is dropped when tb ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	s := Get(tb)
	dsn, name, err := s.CreateDatabase(context.Background())
	return s.dropAtEnd(tb, dsn, name, err)
}

// NewDatabaseFrom is NewDatabase for a database set up by setup (a schema
// migration, say): the binary runs setup once, on a template database, and
// each test gets a copy of it, which is much quicker than setting up each.
// key names the template.
func NewDatabaseFrom(tb testing.TB, key string, setup func(ctx context.Context, dsn string) error) string {
	tb.Helper()
	s := Get(tb)
	s.mu.Lock()
	if s.templates == nil {
		s.templates = map[string]*template{}
	}
	tpl := s.templates[key]
	if tpl == nil {
		tpl = &template{}
		s.templates[key] = tpl
	}
	s.mu.Unlock()
	tpl.once.Do(func() {
		ctx := context.Background()
		var dsn string
		dsn, tpl.name, tpl.err = s.createDatabase(ctx, "template1")
		if tpl.err == nil {
			tpl.err = setup(ctx, dsn)
		}
	})
	if tpl.err != nil {
		tb.Fatalf("pgtest: template %s: %v", key, tpl.err)
	}
	dsn, name, err := s.createDatabase(context.Background(), tpl.name)
	return s.dropAtEnd(tb, dsn, name, err)
}

// dropAtEnd returns dsn, the DSN of database name, which was just created
// (err, if not nil, fails tb instead), and drops the database when tb
// ends.
func (s *Server) dropAtEnd(tb testing.TB, dsn, name string, err error) string {
	tb.Helper()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.DropDatabase(context.Background(), name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

// CreateDatabase creates a database with a random name and returns its DSN
// and name.
func (s *Server) CreateDatabase(ctx context.Context) (dsn, name string, err error) {
	return s.createDatabase(ctx, "template1")
}

func (s *Server) createDatabase(ctx context.Context, from string) (dsn, name string, err error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name = "pgstore_test_" + hex.EncodeToString(b[:])
	// FILE_COPY copies the template's files: far quicker than the default
	// WAL_LOG for the small databases of tests.
	if err := s.exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+from+" STRATEGY FILE_COPY"); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(s.DSN)
	if err != nil {
		return "", "", err
	}
	u.Path = "/" + name
	return u.String(), name, nil
}

// DropDatabase drops database name, disconnecting its sessions.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func (s *Server) exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }() // Exec's error is the statement's outcome; closing changes nothing
	_, err = conn.Exec(ctx, sql)
	return err
}

// Options choose how Start's throwaway cluster runs. The zero value is
// what tests use.
type Options struct {
	// Durable runs the cluster as a production server would: fsync,
	// synchronous_commit and full_page_writes on (initdb syncs its files
	// too), so that a commit returns once its WAL is on disk. Without it
	// the cluster runs with all three off, which is quicker for tests and
	// wrong for measuring.
	Durable bool
}

// Start returns the server PGSTORE_TEST_DSN names, or starts a throwaway
// cluster (non-durable: see Options).
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith is Start with options for the throwaway cluster; they do not
// apply to the server PGSTORE_TEST_DSN names, which runs as it was set up.
func StartWith(opts Options) (*Server, error) {
	if dsn := os.Getenv(DSNEnv); dsn != "" {
		return &Server{DSN: dsn}, nil
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, durable: opts.Durable}
	var owner *user.User
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		if owner, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.ParseUint(owner.Uid, 10, 32)
		gid, _ := strconv.ParseUint(owner.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if s.dir, err = os.MkdirTemp("/tmp", "pgtest-"); err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			s.removeDir()
			return nil, err
		}
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.initdb(); err != nil {
		s.removeDir()
		return nil, err
	}
	// A port that was free a moment ago may be taken before the server
	// binds it (other test binaries run alongside): try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err == nil {
			err = s.start(port)
		}
		if err == nil {
			break
		}
		if attempt == 4 {
			s.removeDir()
			return nil, err
		}
	}
	return s, nil
}

// findBin returns the directory holding initdb and pg_ctl.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest version first ("9" < "15" as strings, so compare numbers).
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb not found on PATH or under /usr/lib/postgresql/*/bin")
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }() // only the port number is wanted
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of the server's programs as the cluster's owner.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (s *Server) initdb() error {
	args := []string{"-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"}
	if !s.durable {
		args = append(args, "--no-sync")
	}
	return s.run("initdb", args...)
}

func (s *Server) start(port int) error {
	syncing := "off"
	if s.durable {
		syncing = "on"
	}
	opts := strings.Join([]string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(port),
		"-c unix_socket_directories=" + s.dir,
		"-c max_connections=300",
		"-c fsync=" + syncing,
		"-c synchronous_commit=" + syncing,
		"-c full_page_writes=" + syncing,
		"-c shared_buffers=32MB",
	}, " ")
	logFile := filepath.Join(s.dir, "server.log")
	if err := s.run("pg_ctl", "-D", s.data(), "-l", logFile, "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("%w\n%s", err, tail(string(log), 2000))
	}
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Stop stops a throwaway cluster and removes its directory; on the server
// of PGSTORE_TEST_DSN it drops the template databases.
func (s *Server) Stop() error {
	if s.dir == "" {
		// Someone else's server: drop the templates made on it.
		var errs []error
		for _, tpl := range s.templates {
			if tpl.name != "" {
				errs = append(errs, s.DropDatabase(context.Background(), tpl.name))
			}
		}
		return errors.Join(errs...)
	}
	err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	s.removeDir()
	return err
}

func (s *Server) removeDir() { _ = os.RemoveAll(s.dir) }
