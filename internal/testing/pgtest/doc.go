// Package pgtest gives tests a PostgreSQL server: the one PGSTORE_TEST_DSN
// names, or a throwaway cluster it starts on loopback, and a fresh
// database per test.
//
// A test binary runs its tests through pgtest.Main, which stops the server
// at the end:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and each test takes a database of its own with pgtest.NewDatabase(t)
// (the first one starts the server, once per binary).
// When no server can be started, NewDatabase skips the test with the
// reason, unless PGSTORE_REQUIRE=1 (CI sets it), when it fails it: CI
// never silently skips.
//
// The throwaway cluster is made by initdb and run by pg_ctl, found on PATH
// or under /usr/lib/postgresql/*/bin (Debian's layout). PostgreSQL refuses
// to run as root, so as root they run as the `postgres` user in a
// directory under /tmp that user owns (a test's temporary directory may
// not be traversable by it). The server listens on 127.0.0.1 on a free
// port, with its socket in that directory, and runs without fsync: the
// tests check the store's logic, not the disk. Main stops it and removes
// the directory. StartWith(Options{Durable: true}) starts one with fsync
// and synchronous commit on, for measurements (the bench harness).
package pgtest
