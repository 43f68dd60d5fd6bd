// Package roottest builds store roots for the tests of the rooms below the
// facade (compact, offline): a root in a test's temporary directory with
// the files a room reads, written as the store writes them, without the
// facade. It must never be imported by non-test code.
package roottest
