package jsonlstore

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

var update = flag.Bool("update", false, "write the fixtures of testdata/jsonlstore that do not exist yet (committed ones are frozen and never rewritten)")

const fixtureRoot = "../testdata/jsonlstore"

// fixtureSchema is the sessnap schema version the committed fixtures were
// written with; they are frozen, so it stays 1 as the codec's grows.
const fixtureSchema = 1

// fixtureRecords returns n lines of a session called id: revision r adds
// one message; generations and times are given per record.
func fixtureRecords(t testing.TB, id string, n int, gen func(r int) uint64) [][]byte {
	s := sessiontest.New(id)
	var lines [][]byte
	for r := 1; r <= n; r++ {
		if r > 1 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d", r), sessiontest.Epoch)))
		}
		payload, err := sessnap.Encode(s)
		require.NoError(t, err)
		// Format 1: the frozen fixtures' records (full records are still
		// written as format 1).
		m := meta{Version: record.Version1, Schema: fixtureSchema, Rev: uint64(r), Gen: gen(r), Time: sessiontest.Epoch.Add(time.Duration(r) * time.Second), Kind: KindFull}
		lines = append(lines, encodeRecord(m, payload))
	}
	return lines
}

func gen1(int) uint64 { return 1 }

// fixtureDeltaRecords returns n lines of a session called id, revision r
// adding one message as in fixtureRecords, written as kinds[r-1] says:
// 'f' a format 1 full record, 'F' a format 2 full record, 'd' a delta.
func fixtureDeltaRecords(t testing.TB, id string, kinds string) [][]byte {
	s := sessiontest.New(id)
	var lines [][]byte
	var prev []byte
	for r := 1; r <= len(kinds); r++ {
		if r > 1 {
			require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d", r), sessiontest.Epoch)))
		}
		payload, err := sessnap.Encode(s)
		require.NoError(t, err)
		m := meta{Version: record.Version1, Schema: fixtureSchema, Rev: uint64(r), Gen: 1, Time: sessiontest.Epoch.Add(time.Duration(r) * time.Second), Kind: KindFull}
		body := payload
		switch kinds[r-1] {
		case 'F':
			m.Version = record.Version2
		case 'd':
			d, ok := record.Diff(prev, payload)
			require.True(t, ok, "revision %d", r)
			m.Version, m.Kind, body = record.Version2, KindDelta, d
		}
		lines = append(lines, encodeRecord(m, body))
		prev = payload
	}
	return lines
}

// spoilDelta returns a delta line whose checksum is valid but whose delta
// does not rebuild its snapshot (a text it appends is altered).
func spoilDelta(t testing.TB, l []byte) []byte {
	r, err := parseLine(l[:len(l)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, KindDelta, r.Kind)
	bad := bytes.Replace(bytes.Clone(r.Payload), []byte("message"), []byte("massage"), 1)
	require.NotEqual(t, r.Payload, bad)
	return encodeRecord(r.meta, bad)
}

func flipByte(line []byte, at int) []byte {
	c := bytes.Clone(line)
	c[at] ^= 0x04
	return c
}

// fixtureCases builds each fixture's log.jsonl.
func fixtureCases(t testing.TB) map[string][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	out := map[string][]byte{}
	base := func(id string) [][]byte { return fixtureRecords(t, id, 6, gen1) }
	b := base("clean")
	out["clean"] = cat(b[:5]...)
	b = base("partial-last-line")
	out["partial-last-line"] = cat(cat(b[:5]...), b[5][:len(b[5])/2])
	b = base("nul-tail")
	out["nul-tail"] = cat(cat(b[:5]...), make([]byte, 5000))
	b = base("crc-fail-last-line")
	out["crc-fail-last-line"] = cat(cat(b[:5]...), flipByte(b[5], len(b[5])/2))
	b = base("torn-page-last-line")
	torn := bytes.Clone(b[5])
	clear(torn[100 : len(torn)-50]) // a lost page inside the last record: NULs, newline intact
	out["torn-page-last-line"] = cat(cat(b[:5]...), torn)
	b = base("last-line-no-newline")
	out["last-line-no-newline"] = cat(cat(b[:5]...), b[5][:len(b[5])-1])
	b = base("crlf")
	var crlf []byte
	for _, l := range b[:5] {
		crlf = append(crlf, l[:len(l)-1]...)
		crlf = append(crlf, '\r', '\n')
	}
	out["crlf"] = crlf
	b = base("bom")
	out["bom"] = cat([]byte("\ufeff"), cat(b[:5]...))
	b = base("bitflip-middle")
	out["bitflip-middle"] = cat(b[0], b[1], flipByte(b[2], len(b[2])/2), b[3], b[4])
	b = base("bitflip-revision")
	out["bitflip-revision"] = cat(b[0], b[1], flipByte(b[2], bytes.Index(b[2], []byte(`"rev":`))+6), b[3], b[4])
	b = base("duplicated-revision")
	out["duplicated-revision"] = cat(b[0], b[1], b[2], b[2], b[3], b[4])
	b = base("revision-gap")
	out["revision-gap"] = cat(b[0], b[1], b[3], b[4])
	b = fixtureRecords(t, "generation-backwards", 5, func(r int) uint64 {
		if r == 4 {
			return 1
		}
		return 2
	})
	out["generation-backwards"] = cat(b...)
	b = base("crc-fail-claims-old-revision")
	out["crc-fail-claims-old-revision"] = cat(cat(b[:5]...), flipByte(b[2], len(b[2])/2))
	b = base("two-damaged-lines-tail")
	out["two-damaged-lines-tail"] = cat(cat(b[:5]...), []byte("garbage one\ngarbage two\n"))
	// A newer program's record: schema 99, an unknown snapshot key.
	b = base("newer-schema")
	last, err := parseLine(b[4][:len(b[4])-1], 1<<20)
	require.NoError(t, err)
	payload := append(bytes.TrimSuffix(bytes.Clone(last.Payload), []byte("}")), []byte(`,"future_field":{"x":1}}`)...)
	m := last.meta
	m.Schema = 99
	out["newer-schema"] = cat(cat(b[:4]...), encodeRecord(m, payload))

	// Format 2: delta records.
	out["deltas"] = cat(fixtureDeltaRecords(t, "deltas", "fdddfdd")...)
	out["v1-then-v2"] = cat(fixtureDeltaRecords(t, "v1-then-v2", "fffddFd")...)
	b = fixtureDeltaRecords(t, "delta-bad-middle", "fdddf")
	out["delta-bad-middle"] = cat(b[0], b[1], spoilDelta(t, b[2]), b[3], b[4])
	b = fixtureDeltaRecords(t, "delta-bad-last", "fdd")
	out["delta-bad-last"] = cat(b[0], b[1], spoilDelta(t, b[2]))
	b = fixtureDeltaRecords(t, "delta-base-damaged", "fdd")
	out["delta-base-damaged"] = cat(b[0], flipByte(b[1], len(b[1])/2), b[2])
	b = fixtureDeltaRecords(t, "delta-first-record", "fdd")
	// The log starts with a delta: revision 1 has no base.
	var renum [][]byte
	for i, l := range b[1:] {
		r, err := parseLine(l[:len(l)-1], 1<<20)
		require.NoError(t, err)
		r.Rev = uint64(i + 1)
		renum = append(renum, encodeRecord(r.meta, r.Payload))
	}
	out["delta-first-record"] = cat(renum...)
	return out
}

type fixtureWant struct {
	latest       uint64 // 0: Load fails with corruption
	history      int    // records History yields before its error (or all)
	historyErrAt int64  // -1: no error; else CorruptionError offset
	acquire      string // "ok", "tail" (a tail removed), "corrupt"
	appendErr    error  // what the new holder's first Append gives (nil: works)
}

func TestFixtures(t *testing.T) {
	cases := fixtureCases(t)
	if *update {
		for name, log := range cases {
			dir := filepath.Join(fixtureRoot, name)
			if _, err := os.Stat(dir); err == nil {
				continue // frozen: a fixture once committed is never rewritten
			}
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), log, 0o644))
		}
	}
	lineLen := func(name string, i int) int64 { // offset of line i in the fixture
		data, err := os.ReadFile(filepath.Join(fixtureRoot, name, LogFile))
		require.NoError(t, err)
		var off int64
		for range i {
			j := bytes.IndexByte(data[off:], '\n')
			off += int64(j) + 1
		}
		return off
	}
	tests := map[string]fixtureWant{
		"clean":                        {latest: 5, history: 5, historyErrAt: -1, acquire: "ok"},
		"partial-last-line":            {latest: 5, history: 5, historyErrAt: -1, acquire: "tail"},
		"nul-tail":                     {latest: 5, history: 5, historyErrAt: -1, acquire: "tail"},
		"crc-fail-last-line":           {latest: 5, history: 5, historyErrAt: -1, acquire: "tail"},
		"torn-page-last-line":          {latest: 5, history: 5, historyErrAt: -1, acquire: "tail"},
		"last-line-no-newline":         {latest: 5, history: 5, historyErrAt: -1, acquire: "tail"},
		"crlf":                         {latest: 0, history: 0, historyErrAt: 0, acquire: "corrupt"},
		"bom":                          {latest: 5, history: 0, historyErrAt: 0, acquire: "ok"},
		"bitflip-middle":               {latest: 5, history: 2, historyErrAt: lineLen("bitflip-middle", 2), acquire: "ok"},
		"bitflip-revision":             {latest: 5, history: 2, historyErrAt: lineLen("bitflip-revision", 2), acquire: "ok"},
		"duplicated-revision":          {latest: 5, history: 3, historyErrAt: lineLen("duplicated-revision", 3), acquire: "ok"},
		"revision-gap":                 {latest: 5, history: 2, historyErrAt: lineLen("revision-gap", 2), acquire: "ok"},
		"generation-backwards":         {latest: 5, history: 3, historyErrAt: lineLen("generation-backwards", 3), acquire: "ok"},
		"crc-fail-claims-old-revision": {latest: 5, history: 5, historyErrAt: -1, acquire: "corrupt"},
		"two-damaged-lines-tail":       {latest: 5, history: 5, historyErrAt: -1, acquire: "corrupt"},
		"newer-schema":                 {latest: 5, history: 5, historyErrAt: -1, acquire: "ok", appendErr: sessionstore.ErrSchemaTooNew},
		// Format 2. A delta that does not rebuild its snapshot, or whose
		// base cannot be read, is corruption at the delta (or at the
		// damaged base), never a tail; a holder then writes in full.
		"deltas":             {latest: 7, history: 7, historyErrAt: -1, acquire: "ok"},
		"v1-then-v2":         {latest: 7, history: 7, historyErrAt: -1, acquire: "ok"},
		"delta-bad-middle":   {latest: 5, history: 2, historyErrAt: lineLen("delta-bad-middle", 2), acquire: "ok"},
		"delta-bad-last":     {latest: 0, history: 2, historyErrAt: lineLen("delta-bad-last", 2), acquire: "ok"},
		"delta-base-damaged": {latest: 0, history: 1, historyErrAt: lineLen("delta-base-damaged", 1), acquire: "ok"},
		"delta-first-record": {latest: 0, history: 0, historyErrAt: 0, acquire: "ok"},
	}
	entries, err := os.ReadDir(fixtureRoot)
	require.NoError(t, err)
	require.Len(t, entries, len(tests), "every fixture has a row and every row a fixture")
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			data, err := os.ReadFile(filepath.Join(fixtureRoot, name, LogFile))
			require.NoError(t, err)
			require.Equal(t, cases[name], data, "the generator no longer produces the committed fixture; fixtures are frozen: add a new one")
			root := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o700))
			logFile := filepath.Join(root, name, LogFile)
			require.NoError(t, os.WriteFile(logFile, data, 0o600))
			st, err := Open(root, Options{})
			require.NoError(t, err)
			defer st.Close()
			id := session.SessionID(name)

			rec, err := st.Load(ctx, id)
			if want.latest == 0 {
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
			} else {
				require.NoError(t, err)
				require.Equal(t, want.latest, rec.Revision)
			}

			n := 0
			var herr error
			for r, err := range st.History(ctx, id) {
				if err != nil {
					herr = err
					break
				}
				n++
				require.Equal(t, uint64(n), r.Revision)
			}
			require.Equal(t, want.history, n)
			if want.historyErrAt < 0 {
				require.NoError(t, herr)
			} else {
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, herr, &ce)
				require.Equal(t, want.historyErrAt, ce.Offset, "offset of %v", herr)
				require.Contains(t, ce.Error(), LogFile)
			}
			// Reading changed nothing.
			after, err := os.ReadFile(logFile)
			require.NoError(t, err)
			require.Equal(t, data, after, "readers never modify")

			w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
			switch want.acquire {
			case "corrupt":
				var ce *sessionstore.CorruptionError
				require.ErrorAs(t, err, &ce)
				after, err := os.ReadFile(logFile)
				require.NoError(t, err)
				require.Equal(t, data, after, "a corrupt log is never cut automatically")
				return
			case "tail":
				require.NoError(t, err)
				rep := w.Recovery()
				require.Positive(t, rep.TailBytes)
				require.NotEmpty(t, rep.ForensicFile)
				kept, err := os.ReadFile(filepath.Join(root, rep.ForensicFile))
				require.NoError(t, err)
				require.Equal(t, data[rep.TailOffset:], kept, "the removed tail is kept byte for byte")
				cut, err := os.ReadFile(logFile)
				require.NoError(t, err)
				require.Equal(t, data[:rep.TailOffset], cut)
			default:
				require.NoError(t, err)
				require.Zero(t, w.Recovery().TailBytes)
			}
			defer w.Release(ctx)
			if want.latest == 0 {
				return
			}
			latest, err := st.Load(ctx, id)
			require.NoError(t, err)
			require.Greater(t, w.Generation(), latest.Generation, "above every generation in the log")
			rev, err := w.Append(ctx, latest.Revision, latest.Snapshot)
			if want.appendErr != nil {
				require.ErrorIs(t, err, want.appendErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want.latest+1, rev)
		})
	}
}
