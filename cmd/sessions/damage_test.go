package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/pgtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
)

// badStore returns a store with two sound sessions ("a", "e") and three
// whose log is unusable: "b" a FIFO, "c" missing (its summary and lease
// files left), "d" a directory; and "Documents", a directory that holds
// no session at all.
func badStore(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	st, err := jsonlstore.Open(root, jsonlstore.Options{})
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		writeSession(t, st, sessiontest.New(id), 2)
	}
	require.NoError(t, st.Close())
	logOf := func(id string) string { return filepath.Join(root, id, jsonlstore.LogFile) }
	require.NoError(t, os.Remove(logOf("b")))
	require.NoError(t, syscall.Mkfifo(logOf("b"), 0o600))
	require.NoError(t, os.Remove(logOf("c")))
	require.NoError(t, os.Remove(logOf("d")))
	require.NoError(t, os.Mkdir(logOf("d"), 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(root, "Documents"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "Documents", "notes.txt"), []byte("mine"), 0o600))
	return root
}

// TestOneBadSessionNeverBlocksTheStore: with three sessions of five
// unusable, every store-wide command reports each of them, with the
// reason, and does its work on the two others: ls lists them (exit 0,
// warnings on stderr), verify checks them (exit 3), du counts them, backup
// and compact copy or compact them (exit 1: a session was left out), and
// rm creates nothing in a directory without a log.
// A directory that holds no session is none of their business.
func TestOneBadSessionNeverBlocksTheStore(t *testing.T) {
	root := badStore(t)
	bad := []string{"b", "c", "d"}
	requireNamesBad := func(out string) {
		t.Helper()
		for _, id := range bad {
			require.Regexp(t, `(?m)^.*\b`+id+`\b.*(cannot be read|UNREADABLE|CORRUPT|failed).*$`, out, "session %s is reported", id)
		}
		require.NotContains(t, out, "Documents")
	}

	r := sessions(t, nil, "--dir", root, "ls", "--order", "id_asc")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Regexp(t, `(?s)\ba\b.*\be\b`, r.Stdout)
	requireNamesBad(r.Stderr)
	require.Contains(t, r.Stderr, "log.jsonl is missing")

	r = sessions(t, nil, "--dir", root, "verify")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Regexp(t, `(?m)^a: ok`, r.Stdout)
	require.Regexp(t, `(?m)^e: ok`, r.Stdout)
	requireNamesBad(r.Stdout)
	require.Contains(t, r.Stdout, "5 sessions verified: 3 corrupt")

	r = sessions(t, nil, "--dir", root, "du")
	require.Equal(t, exitOK, r.Code, r.String())

	dest := filepath.Join(t.TempDir(), "backup")
	r = sessions(t, nil, "--dir", root, "backup", dest)
	require.Equal(t, exitFail, r.Code, r.String())
	requireNamesBad(r.Stdout)
	require.Contains(t, r.Stdout, "2 sessions copied")
	v := sessions(t, nil, "--dir", dest, "verify")
	require.Equal(t, exitOK, v.Code, v.String())
	require.Contains(t, v.Stdout, "2 sessions verified: all sound")

	r = sessions(t, nil, "--dir", root, "backup", filepath.Join(root, "backup"))
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "inside")
	_, err := os.Stat(filepath.Join(root, "backup"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing created")

	r = compactCmd(t, nil, "--dir", root, "--keep-last", "1")
	require.Equal(t, exitFail, r.Code, r.String())
	requireNamesBad(r.Stdout)
	require.Contains(t, r.Stdout, "5 sessions: 2 compacted, 0 skipped, 3 failed")

	for _, id := range []string{"c", "Documents"} {
		before, err := os.ReadDir(filepath.Join(root, id))
		require.NoError(t, err)
		r = sessions(t, nil, "--dir", root, "rm", id)
		require.Equal(t, exitFail, r.Code, r.String())
		if id == "c" {
			require.Contains(t, r.Stderr, "restore c/log.jsonl")
			r = sessions(t, nil, "--dir", root, "repair", id, "--truncate-at-corruption")
			require.Equal(t, exitFail, r.Code, r.String())
			require.Contains(t, r.Stderr, "restore c/log.jsonl", "repair cannot bring the records back, and says so")
		}
		after, err := os.ReadDir(filepath.Join(root, id))
		require.NoError(t, err)
		require.Equal(t, len(before), len(after), "rm and repair of %s created nothing", id)
	}
}

// TestMigrateGoesPastBadSessions: migrating a store with unusable
// sessions copies the sound ones and reports each bad one (exit 1).
func TestMigrateGoesPastBadSessions(t *testing.T) {
	root := badStore(t)
	dsn := pgtest.NewDatabase(t)
	r := sessions(t, nil, "migrate", "--from", root, "--to", dsn)
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stdout, "2 sessions migrated")
	for _, id := range []string{"b", "c", "d"} {
		require.Contains(t, r.Stderr, "session "+id+":")
	}
	require.NotContains(t, r.Stderr, "Documents")
	r = sessions(t, nil, "--dir", dsn, "ls", "--order", "id_asc")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Regexp(t, `(?s)\ba\b.*\be\b`, r.Stdout)
}
