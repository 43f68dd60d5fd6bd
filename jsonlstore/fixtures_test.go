package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
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
		m := record.Meta{Version: record.Version1, Schema: fixtureSchema, Rev: uint64(r), Gen: gen(r), Time: sessiontest.Epoch.Add(time.Duration(r) * time.Second), Kind: record.KindFull}
		lines = append(lines, record.Encode(m, payload))
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
		m := record.Meta{Version: record.Version1, Schema: fixtureSchema, Rev: uint64(r), Gen: 1, Time: sessiontest.Epoch.Add(time.Duration(r) * time.Second), Kind: record.KindFull}
		body := payload
		switch kinds[r-1] {
		case 'F':
			m.Version = record.Version2
		case 'd':
			d, ok := record.Diff(prev, payload)
			require.True(t, ok, "revision %d", r)
			m.Version, m.Kind, body = record.Version2, record.KindDelta, d
		}
		lines = append(lines, record.Encode(m, body))
		prev = payload
	}
	return lines
}

// spoilDelta returns a delta line whose checksum is valid but whose delta
// does not rebuild its snapshot (a text it appends is altered).
func spoilDelta(t testing.TB, l []byte) []byte {
	r, err := parseLine(l[:len(l)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, record.KindDelta, r.Kind)
	bad := bytes.Replace(bytes.Clone(r.Payload), []byte("message"), []byte("massage"), 1)
	require.NotEqual(t, r.Payload, bad)
	return record.Encode(r.Meta, bad)
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
	m := last.Meta
	m.Schema = 99
	out["newer-schema"] = cat(cat(b[:4]...), record.Encode(m, payload))

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
		renum = append(renum, record.Encode(r.Meta, r.Payload))
	}
	out["delta-first-record"] = cat(renum...)

	// Written by a newer program (a whole line with a valid checksum):
	// never a tail, never cut, never built on.
	b = base("newer-format")
	// Format 4 was a later format when this fixture was made; it is now
	// the format of records holding blob references, and this line is one
	// whose snapshot does not decode.
	newer := record.Meta{Version: 4, Schema: fixtureSchema, Rev: 2, Gen: 2, Time: sessiontest.Epoch.Add(time.Minute), Kind: record.KindFull}
	out["newer-format"] = cat(b[0], record.Encode(newer, []byte(`{"layout":"of a later format"}`)))
	b = base("newer-format-v5")
	newer = record.Meta{Version: 5, Schema: fixtureSchema, Rev: 2, Gen: 2, Time: sessiontest.Epoch.Add(time.Minute), Kind: record.KindFull}
	out["newer-format-v5"] = cat(b[0], record.Encode(newer, []byte(`{"layout":"of a later format"}`)))
	b = base("unknown-kind")
	patch := record.Meta{Version: record.Version2, Schema: fixtureSchema, Rev: 2, Gen: 2, Time: sessiontest.Epoch.Add(time.Minute), Kind: "patch"}
	out["unknown-kind"] = cat(b[0], record.Encode(patch, []byte(`{"ops":[]}`)))
	// What a program without the newer-record checks wrote on top.
	b = base("unknown-kind-built-on")
	r3, err := parseLine(b[2][:len(b[2])-1], 1<<20)
	require.NoError(t, err)
	r3.Gen, r3.Time = 3, sessiontest.Epoch.Add(2*time.Minute)
	out["unknown-kind-built-on"] = cat(b[0], record.Encode(patch, []byte(`{"ops":[]}`)), record.Encode(r3.Meta, r3.Payload))

	// A history of full records and deltas that a newer program went on
	// with: the revisions before its record read, one by one too.
	d := fixtureDeltaRecords(t, "newer-after-deltas", "fddfdd")
	newer = record.Meta{Version: 5, Schema: fixtureSchema, Rev: 7, Gen: 2, Time: sessiontest.Epoch.Add(time.Minute), Kind: record.KindFull}
	out["newer-after-deltas"] = cat(cat(d...), record.Encode(newer, []byte(`{"layout":"of a later format"}`)))

	// The last lines copied again at the end (a bad `cat log >> log`).
	d = fixtureDeltaRecords(t, "duplicated-tail-deltas", "f"+strings.Repeat("d", 15))
	out["duplicated-tail-deltas"] = cat(cat(d...), d[14], d[15])
	b = fixtureRecords(t, "duplicated-tail-full", 16, gen1)
	out["duplicated-tail-full"] = cat(cat(b...), b[13], b[14], b[15])

	// Format 3: a log a repair left, revisions 4 and 5 set aside.
	b = fixtureRecords(t, "repaired-gap", 7, gen1)
	r3, err = parseLine(b[2][:len(b[2])-1], 1<<20)
	require.NoError(t, err)
	gap := record.Meta{Version: record.VersionOf(record.KindGap), Schema: fixtureSchema, Rev: 4, Gen: r3.Gen, Time: r3.Time, Kind: record.KindGap}
	gapLine := record.Encode(gap, record.EncodeGap(record.Gap{Last: 5,
		Reason:   "revision 4 failed its checksum; revision 5, a delta, could not be rebuilt without it",
		Forensic: "repaired-gap/forensic/repair-4-20261201T120000.000000000Z.bin"}))
	d = fixtureDeltaRecords(t, "repaired-gap", "fffffFd")
	out["repaired-gap"] = cat(b[0], b[1], b[2], gapLine, b[5], d[6])
	return out
}

// format3Fixtures are the fixtures TestFormat3Fixtures checks.
var format3Fixtures = map[string]bool{"newer-format": true, "newer-format-v5": true, "unknown-kind": true, "unknown-kind-built-on": true, "newer-after-deltas": true,
	"duplicated-tail-deltas": true, "duplicated-tail-full": true, "repaired-gap": true}

// format3Want is what the fixtures of newer-record handling, duplicated
// tails and repaired logs must give.
type format3Want struct {
	latest      uint64 // 0: Load fails with wantLoad
	loadErr     error
	history     []uint64 // revisions History yields, a gap as its first
	historyErr  error    // the error History ends with (nil: none)
	gaps        int      // GapErrors History yields on its way
	acquireErr  error    // nil: Acquire works and an Append follows
	verify      string   // "ok", "corrupt", "newer"
	errContains string   // in Acquire's error
	// revisions LoadRevision reads, and newerAt the first revision it
	// refuses as a newer program's (0: none is)
	loads   []uint64
	newerAt uint64
}

// TestFormat3Fixtures: a newer program's records are read up to, never
// cut or built on; a log whose end repeats earlier records is refused to
// a holder; a repaired log reads with its gap reported.
func TestFormat3Fixtures(t *testing.T) {
	cases := fixtureCases(t)
	tests := map[string]format3Want{
		"newer-format": {loadErr: sessionstore.ErrCorrupt, history: []uint64{1}, historyErr: sessionstore.ErrCorrupt,
			acquireErr: sessionstore.ErrCorrupt, verify: "corrupt", errContains: "payload belongs to session"},
		"newer-format-v5": {loadErr: sessionstore.ErrSchemaTooNew, history: []uint64{1}, historyErr: sessionstore.ErrSchemaTooNew,
			acquireErr: sessionstore.ErrSchemaTooNew, verify: "newer", errContains: "written by a newer version", loads: []uint64{1}, newerAt: 2},
		"unknown-kind": {loadErr: sessionstore.ErrSchemaTooNew, history: []uint64{1}, historyErr: sessionstore.ErrSchemaTooNew,
			acquireErr: sessionstore.ErrSchemaTooNew, verify: "newer", errContains: `kind "patch"`, loads: []uint64{1}, newerAt: 2},
		"unknown-kind-built-on": {latest: 3, history: []uint64{1}, historyErr: sessionstore.ErrSchemaTooNew,
			acquireErr: sessionstore.ErrSchemaTooNew, verify: "newer", errContains: `kind "patch"`, loads: []uint64{1, 3}, newerAt: 2},
		"newer-after-deltas": {loadErr: sessionstore.ErrSchemaTooNew, history: seq(1, 6), historyErr: sessionstore.ErrSchemaTooNew,
			acquireErr: sessionstore.ErrSchemaTooNew, verify: "newer", errContains: "record format 5", loads: seq(1, 6), newerAt: 7},
		"duplicated-tail-deltas": {loadErr: sessionstore.ErrCorrupt, history: seq(1, 16), historyErr: sessionstore.ErrCorrupt,
			acquireErr: sessionstore.ErrCorrupt, verify: "corrupt", errContains: "revision 15 follows revision 16 (a repeated revision)"},
		"duplicated-tail-full": {latest: 16, history: seq(1, 16), historyErr: sessionstore.ErrCorrupt,
			acquireErr: sessionstore.ErrCorrupt, verify: "corrupt", errContains: "a repeated revision"},
		"repaired-gap": {latest: 7, history: []uint64{1, 2, 3, 4, 6, 7}, gaps: 1, verify: "ok"},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(fixtureRoot, name)
			data, err := os.ReadFile(filepath.Join(dir, LogFile))
			require.NoError(t, err, "fixture missing: go test -run TestFixtures -update writes new ones")
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
				require.ErrorIs(t, err, want.loadErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, want.latest, rec.Revision)
			}
			var revs []uint64
			var herr error
			gaps := 0
			for r, err := range st.History(ctx, id) {
				var ge *sessionstore.GapError
				switch {
				case errors.As(err, &ge):
					gaps++
					revs = append(revs, ge.First)
				case err != nil:
					herr = err
				default:
					revs = append(revs, r.Revision)
				}
			}
			require.Equal(t, want.history, revs)
			require.Equal(t, want.gaps, gaps)
			if want.historyErr == nil {
				require.NoError(t, herr)
			} else {
				require.ErrorIs(t, herr, want.historyErr)
			}
			if errors.Is(want.historyErr, sessionstore.ErrSchemaTooNew) {
				require.NotErrorIs(t, herr, sessionstore.ErrCorrupt, "a newer program's record is not corruption")
			}

			// The revisions before a newer program's record read one by
			// one (as History reads them); from it on, LoadRevision says
			// a newer program wrote it.
			for _, rev := range want.loads {
				rec, err := st.LoadRevision(ctx, id, rev)
				require.NoError(t, err, "revision %d", rev)
				require.Equal(t, rev, rec.Revision)
				require.Equal(t, id, rec.Snapshot.ID)
				light, err := st.LoadWith(ctx, id, sessionstore.LoadOptions{Revision: rev, WithoutContent: true})
				require.NoError(t, err, "revision %d without content", rev)
				require.Equal(t, rev, light.Revision)
			}
			if want.newerAt > 0 {
				for _, rev := range []uint64{want.newerAt, want.newerAt + 1} {
					if slices.Contains(want.loads, rev) {
						continue // a record an older program wrote after it (and Load reads)
					}
					_, err := st.LoadRevision(ctx, id, rev)
					var ne *sessionstore.NewerRecordError
					require.ErrorAs(t, err, &ne, "revision %d", rev)
					require.Equal(t, want.newerAt, ne.Revision)
					require.NotErrorIs(t, err, sessionstore.ErrCorrupt)
				}
			}

			vr, err := st.Verify(ctx, id)
			require.NoError(t, err)
			sr := vr.Sessions[0]
			switch want.verify {
			case "ok":
				require.True(t, sr.OK(), "%+v", sr)
				require.Nil(t, sr.Newer)
			case "corrupt":
				require.False(t, sr.OK())
			case "newer":
				require.True(t, sr.OK(), "a newer version's records are not corruption: %+v", sr)
				require.NotNil(t, sr.Newer)
				require.Equal(t, 1, vr.NewerCount())
			}

			w, err := st.TryAcquire(ctx, id, sessionstore.AcquireOptions{})
			if want.acquireErr != nil {
				require.ErrorIs(t, err, want.acquireErr)
				require.ErrorContains(t, err, want.errContains)
				after, err := os.ReadFile(logFile)
				require.NoError(t, err)
				require.Equal(t, data, after, "nothing is cut or written")
				_, err = os.Stat(filepath.Join(root, name, ForensicDir))
				require.ErrorIs(t, err, fs.ErrNotExist, "nothing is set aside")
				return
			}
			require.NoError(t, err)
			defer w.Release(ctx)
			latest, err := st.Load(ctx, id)
			require.NoError(t, err)
			rev, err := w.Append(ctx, latest.Revision, latest.Snapshot)
			require.NoError(t, err)
			require.Equal(t, want.latest+1, rev)
			_, err = st.LoadRevision(ctx, id, 5)
			var ge *sessionstore.GapError
			require.ErrorAs(t, err, &ge)
			require.Equal(t, [2]uint64{4, 5}, [2]uint64{ge.First, ge.Last})
			require.ErrorIs(t, err, sessionstore.ErrRevisionsMissing)
		})
	}
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for r := from; r <= to; r++ {
		out = append(out, r)
	}
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
		"duplicated-revision":          {latest: 5, history: 3, historyErrAt: lineLen("duplicated-revision", 3), acquire: "corrupt"},
		"revision-gap":                 {latest: 5, history: 2, historyErrAt: lineLen("revision-gap", 2), acquire: "corrupt"},
		"generation-backwards":         {latest: 5, history: 3, historyErrAt: lineLen("generation-backwards", 3), acquire: "corrupt"},
		"crc-fail-claims-old-revision": {latest: 5, history: 5, historyErrAt: -1, acquire: "corrupt"},
		"two-damaged-lines-tail":       {latest: 5, history: 5, historyErrAt: -1, acquire: "corrupt"},
		"newer-schema":                 {latest: 5, history: 5, historyErrAt: -1, acquire: "ok", appendErr: sessionstore.ErrSchemaTooNew},
		// Format 2. A delta that does not rebuild its snapshot, or whose
		// base cannot be read, is corruption at the delta (or at the
		// damaged base), never a tail; a holder then writes in full.
		"deltas":             {latest: 7, history: 7, historyErrAt: -1, acquire: "ok"},
		"v1-then-v2":         {latest: 7, history: 7, historyErrAt: -1, acquire: "ok"},
		"delta-bad-middle":   {latest: 5, history: 2, historyErrAt: lineLen("delta-bad-middle", 2), acquire: "ok"},
		"delta-bad-last":     {latest: 0, history: 2, historyErrAt: lineLen("delta-bad-last", 2), acquire: "corrupt"},
		"delta-base-damaged": {latest: 0, history: 1, historyErrAt: lineLen("delta-base-damaged", 1), acquire: "corrupt"},
		"delta-first-record": {latest: 0, history: 0, historyErrAt: 0, acquire: "corrupt"},
	}
	entries, err := os.ReadDir(fixtureRoot)
	require.NoError(t, err)
	require.Len(t, entries, len(tests)+len(format3Fixtures)+len(format4Fixtures), "every fixture has a row and every row a fixture")
	for name := range format3Fixtures {
		delete(cases, name) // TestFormat3Fixtures checks them
	}
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

// TestLoadRevisionBeforeNewerRecord: a compacted session that a newer
// program went on with (its log ends with a record of format 5) reads
// every revision before that record one by one, the archived ones and the
// log's, as History reads them; that record's revision, and any after it,
// is the newer program's.
func TestLoadRevisionBeforeNewerRecord(t *testing.T) {
	ctx := context.Background()
	st := openUncheckedStore(t) // a newer program's record is not sound to verify
	toolCompacted(t, st)
	latest, err := st.Load(ctx, "arch")
	require.NoError(t, err)
	newer := record.Meta{Version: 5, Schema: fixtureSchema, Rev: 9, Gen: latest.Generation + 1, Time: latest.Time.Add(time.Second), Kind: record.KindFull}
	f, err := os.OpenFile(filepath.Join(st.Dir(), "arch", LogFile), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(record.Encode(newer, []byte(`{"layout":"of a later format"}`)))
	require.NoError(t, f.Close())
	require.NoError(t, err)

	var history []uint64
	for rec, err := range st.History(ctx, "arch") {
		if err != nil {
			require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
			break
		}
		history = append(history, rec.Revision)
	}
	require.Equal(t, seq(1, 8), history)
	for _, rev := range history {
		rec, err := st.LoadRevision(ctx, "arch", rev)
		require.NoError(t, err, "revision %d", rev)
		require.Equal(t, rev, rec.Revision)
		require.Len(t, rec.Snapshot.Messages, int(rev)-1, "revision %d", rev)
	}
	_, err = st.Load(ctx, "arch")
	require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
	for _, rev := range []uint64{9, 10} {
		_, err = st.LoadRevision(ctx, "arch", rev)
		var ne *sessionstore.NewerRecordError
		require.ErrorAs(t, err, &ne, "revision %d", rev)
		require.Equal(t, uint64(9), ne.Revision)
	}
}
