package jsonlstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// rewindFixtureRoot holds the format 5 fixture: a session rewound in
// place. It is a root of its own so that the tables over every fixture of
// testdata/jsonlstore stay as they are.
const rewindFixtureRoot = "../testdata/rewind"

// rewindFixture returns the log of v5-rewind: ten messages over three
// revisions (a full record of eight, two deltas), revision 4 a rewind to
// the first eight (a format 5 delta that drops two), revision 5 a new
// ninth message (a full record: the chain outgrew the budget of the
// shorter conversation).
func rewindFixture(t testing.TB) []byte {
	const id = "v5-rewind"
	s := sessiontest.New(id)
	var tr record.Tracker
	var log []byte
	msgs, made := 0, 0
	write := func(rev int, drop int, add ...string) {
		for _, text := range add {
			m := session.TextMessage(session.RoleUser, text, sessiontest.Epoch)
			made++
			m.ID = fmt.Sprintf("msg-%d", made)
			require.NoError(t, s.AppendMessage(m))
		}
		payload, err := sessnap.Encode(s)
		require.NoError(t, err)
		members, err := record.Members(payload)
		require.NoError(t, err)
		if tr.Known() {
			for i := range members {
				if string(members[i].Key) != `"messages"` {
					continue
				}
				conv := s.Conversation()
				var elems [][]byte
				for _, m := range conv[len(conv)-len(add):] {
					e, err := sessnap.AppendMessage(nil, m, nil)
					require.NoError(t, err)
					elems = append(elems, e)
				}
				members[i] = record.Member{Key: members[i].Key, Grown: true, Drop: drop, Append: elems}
			}
		}
		m := record.Meta{Schema: fixtureSchema, Rev: uint64(rev), Gen: 1, Time: sessiontest.Epoch.Add(time.Duration(rev) * time.Second)}
		line, err := tr.Next(m, members, 1<<20, record.Versions{})
		require.NoError(t, err)
		log = append(log, line...)
		msgs = s.MessageCount()
	}
	write(1, 0, "first", "second", "third", "4", "5", "6", "7", "8")
	write(2, 0, "ninth")
	write(3, 0, "tenth")
	require.NoError(t, s.Truncate(8, true))
	write(4, 2)
	write(5, 0, "ninth again")
	require.Equal(t, 9, msgs)
	return log
}

// TestRewindFixture: the committed v5-rewind log is what the generator
// writes (frozen); its rewind is a format 5 delta of a few bytes and every
// record before it is of format 4 or lower, so a program of the previous
// release (formats 1 to 4) reads revisions 1 to 3 and stops at it as a
// newer program's record; this program reads every revision, the rewound
// one with the first three messages, and appends after it.
func TestRewindFixture(t *testing.T) {
	const name = "v5-rewind"
	want := rewindFixture(t)
	path := filepath.Join(rewindFixtureRoot, name, LogFile)
	if *update {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, want, 0o644))
		}
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err, "fixture missing: go test -run TestRewindFixture -update writes it")
	require.Equal(t, string(want), string(data), "the generator no longer produces the committed fixture; fixtures are frozen: add a new one")

	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 5)
	for i, l := range lines {
		r, err := parseLine(l[:len(l)-1], 1<<20)
		require.NoError(t, err)
		if i == 3 {
			require.Equal(t, record.Version5, r.Version)
			require.Equal(t, record.KindDelta, r.Kind)
			require.Contains(t, string(r.Payload), `"drop":{"messages":2}`)
			require.Less(t, len(l), 256, "a rewind is a small record")
			continue
		}
		require.LessOrEqual(t, r.Version, record.Version4, "revision %d is readable by the previous release", i+1)
	}

	ctx := context.Background()
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, name, LogFile), data, 0o600))
	st, err := Open(root, Options{})
	require.NoError(t, err)
	defer st.Close()
	texts := func(rec sessionstore.Record) []string {
		var out []string
		for _, m := range rec.Snapshot.Messages {
			out = append(out, m.Parts[0].Text)
		}
		return out
	}
	for rev, want := range map[uint64][]string{
		3: {"first", "second", "third", "4", "5", "6", "7", "8", "ninth", "tenth"},
		4: {"first", "second", "third", "4", "5", "6", "7", "8"},
		5: {"first", "second", "third", "4", "5", "6", "7", "8", "ninth again"},
	} {
		rec, err := st.LoadRevision(ctx, name, rev)
		require.NoError(t, err, "revision %d", rev)
		require.Equal(t, want, texts(rec), "revision %d", rev)
	}
	n := 0
	for _, err := range st.History(ctx, name) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 5, n)
	w, err := st.Acquire(ctx, name, sessionstore.AcquireOptions{})
	require.NoError(t, err)
	rec, err := w.Latest(ctx)
	require.NoError(t, err)
	_, err = w.Append(ctx, rec.Revision, rec.Snapshot)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	v, err := st.Verify(ctx, name)
	require.NoError(t, err)
	require.True(t, v.OK(), "%+v", v)
}
