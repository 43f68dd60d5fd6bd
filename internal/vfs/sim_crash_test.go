package vfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = simPage

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// fill returns n bytes, none of them NUL, so a surviving byte is never
// mistaken for a lost one.
func fill(n int, tag byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 1 + (tag+byte(i*7+i/page))%250
	}
	return b
}

// create makes name with data; syncFile fsyncs it, syncDir fsyncs its
// directory.
func create(t *testing.T, fsys FS, name string, data []byte, syncFile, syncDir bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	if len(data) > 0 {
		_, err = f.Write(data)
		require.NoError(t, err)
	}
	if syncFile {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
	if syncDir {
		require.NoError(t, fsys.SyncDir(parent(name)))
	}
}

func appendTo(t *testing.T, fsys FS, name string, data []byte, datasync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	if datasync {
		require.NoError(t, f.Datasync())
	}
	require.NoError(t, f.Close())
}

func readOrNil(s *Sim, name string) []byte {
	b, err := s.ReadFile(name)
	if err != nil {
		return nil
	}
	return b
}

func exists(s *Sim, name string) bool {
	_, err := s.Lstat(name)
	return err == nil
}

// pages checks that b is made of whole surviving pieces of want: every
// byte is want's or NUL, and within each 4 KiB page (cut at the offsets
// of the writes, at most one piece per page here) all bytes agree. It
// returns how many pages survived.
func pagesOf(t *testing.T, b, want []byte) int {
	t.Helper()
	require.LessOrEqual(t, len(b), len(want))
	n := 0
	for lo := 0; lo < len(b); lo += page {
		hi := min(lo+page, len(b))
		got := b[lo:hi]
		switch {
		case bytes.Equal(got, want[lo:hi]):
			n++
		case bytes.Count(got, []byte{0}) == len(got):
		default:
			t.Fatalf("page at %d is torn inside: neither whole data nor NULs", lo)
		}
	}
	return n
}

// TestCrashSyncedDataSurvives: what a Sync/Datasync covered, in a file
// whose name a SyncDir covered, survives every crash, whatever happens to
// unsynced appends after it.
func TestCrashSyncedDataSurvives(t *testing.T) {
	for _, tc := range []struct {
		name string
		sync func(File) error
	}{{"Sync", File.Sync}, {"Datasync", File.Datasync}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSim()
			require.NoError(t, s.Mkdir("d", 0o700))
			require.NoError(t, s.SyncDir("."))
			synced := fill(3*page+100, 1)
			f, err := s.OpenFile("d/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			require.NoError(t, err)
			_, err = f.Write(synced)
			require.NoError(t, err)
			require.NoError(t, tc.sync(f))
			require.NoError(t, s.SyncDir("d"))
			_, err = f.Write(fill(5*page, 2)) // unsynced
			require.NoError(t, err)
			for seed := range uint64(300) {
				got := readOrNil(s.Crash(seeded(seed)), "d/log")
				require.GreaterOrEqual(t, len(got), len(synced), "seed %d", seed)
				require.Equal(t, synced, got[:len(synced)], "seed %d", seed)
			}
			require.Equal(t, synced, readOrNil(s.CrashDurableOnly(), "d/log"))
		})
	}
}

// TestCrashUnsyncedWritesSurviveByPage: unsynced writes survive in 4 KiB
// pieces, independently; over many seeds, none, some and all of them.
func TestCrashUnsyncedWritesSurviveByPage(t *testing.T) {
	s := NewSim()
	create(t, s, "f", nil, true, true)
	data := fill(10*page, 3)
	appendTo(t, s, "f", data, false)

	var none, some, all int
	for seed := range uint64(400) {
		got := readOrNil(s.Crash(seeded(seed)), "f")
		switch pagesOf(t, got, data) {
		case 0:
			none++
		case 10:
			all++
		default:
			some++
		}
	}
	t.Logf("none=%d some=%d all=%d", none, some, all)
	assert.Positive(t, none)
	assert.Positive(t, some)
	assert.Positive(t, all)
	require.Empty(t, readOrNil(s.CrashDurableOnly(), "f"))
	require.Equal(t, data, readOrNil(s.CrashAll(), "f"))
}

// TestCrashPiecesFollowPageBoundaries: a write at an unaligned offset is
// cut at 4 KiB-aligned file offsets, not at offsets relative to the write.
func TestCrashPiecesFollowPageBoundaries(t *testing.T) {
	s := NewSim()
	head := fill(1000, 4)
	create(t, s, "f", head, true, true)
	tail := fill(2*page+500, 5) // covers [1000, 9692): pieces end at 4096, 8192
	appendTo(t, s, "f", tail, false)
	want := append(slices.Clone(head), tail...)
	cuts := []int{1000, page, 2 * page, len(want)}
	seen := map[string]bool{}
	for seed := range uint64(400) {
		got := readOrNil(s.Crash(seeded(seed)), "f")
		require.Equal(t, head, got[:1000])
		pattern := ""
		for i := 0; i+1 < len(cuts); i++ {
			lo, hi := cuts[i], cuts[i+1]
			var piece []byte
			if lo < len(got) {
				piece = got[lo:min(hi, len(got))]
			}
			switch {
			case len(piece) == 0:
				pattern += "-"
			case bytes.Equal(piece, want[lo:hi]):
				pattern += "D"
			case bytes.Count(piece, []byte{0}) == len(piece) && (len(piece) == hi-lo || hi == len(want)):
				pattern += "0"
			default:
				t.Fatalf("seed %d: piece [%d,%d) torn: %d bytes", seed, lo, hi, len(piece))
			}
		}
		seen[pattern] = true
	}
	t.Logf("patterns: %v", seen)
	for _, p := range []string{"---", "DDD", "D--", "0D-", "0DD", "00D"} {
		assert.True(t, seen[p], "pattern %s never seen", p)
	}
}

// TestCrashNULExtension: a grown file may come back at its grown size with
// NULs where its data was lost (size metadata persisted, data not).
func TestCrashNULExtension(t *testing.T) {
	s := NewSim()
	create(t, s, "f", fill(page, 6), true, true)
	grown := fill(3*page, 7)
	appendTo(t, s, "f", grown, false)
	want := append(fill(page, 6), grown...)
	extended := 0
	for seed := range uint64(300) {
		got := readOrNil(s.Crash(seeded(seed)), "f")
		pagesOf(t, got, want)
		// A trailing NUL page cannot come from a gap (a gap is always
		// followed by surviving data): only from size metadata.
		if len(got) == len(want) && bytes.Count(got[len(got)-page:], []byte{0}) == page {
			extended++
		}
	}
	t.Logf("NUL-extended in %d of 300 crashes", extended)
	require.Positive(t, extended)
}

// TestCrashTruncate: an unsynced truncate may or may not survive; a synced
// one always does.
func TestCrashTruncate(t *testing.T) {
	s := NewSim()
	data := fill(3*page, 8)
	create(t, s, "f", data, true, true)
	f, err := s.OpenFile("f", os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(100))
	seen := map[int]bool{}
	for seed := range uint64(200) {
		got := readOrNil(s.Crash(seeded(seed)), "f")
		require.Contains(t, []int{100, 3 * page}, len(got))
		require.Equal(t, data[:len(got)], got)
		seen[len(got)] = true
	}
	require.Len(t, seen, 2)
	require.NoError(t, f.Datasync())
	for seed := range uint64(50) {
		require.Equal(t, data[:100], readOrNil(s.Crash(seeded(seed)), "f"))
	}
}

// TestCrashDirectoryEntries: the rules for names.
func TestCrashDirectoryEntries(t *testing.T) {
	type outcome struct{ present, absent int }
	observe := func(s *Sim, name string) outcome {
		var o outcome
		for seed := range uint64(200) {
			if exists(s.Crash(seeded(seed)), name) {
				o.present++
			} else {
				o.absent++
			}
		}
		return o
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Sim)
		path  string
		// sometimes: the name may survive or vanish; else always survives
		// (always=true) or never (always=false).
		sometimes, always bool
	}{
		{
			name:      "fsynced new file in an unsynced directory can vanish",
			setup:     func(t *testing.T, s *Sim) { create(t, s, "f", []byte("x"), true, false) },
			path:      "f",
			sometimes: true,
		},
		{
			name:   "fsynced file in a synced directory survives",
			setup:  func(t *testing.T, s *Sim) { create(t, s, "f", []byte("x"), true, true) },
			path:   "f",
			always: true,
		},
		{
			name: "file in a synced new directory whose parent is unsynced can vanish",
			setup: func(t *testing.T, s *Sim) {
				require.NoError(t, s.Mkdir("d", 0o700))
				create(t, s, "d/f", []byte("x"), true, true)
			},
			path:      "d/f",
			sometimes: true,
		},
		{
			name: "synced chain survives",
			setup: func(t *testing.T, s *Sim) {
				require.NoError(t, s.Mkdir("d", 0o700))
				create(t, s, "d/f", []byte("x"), true, true)
				require.NoError(t, s.SyncDir("."))
			},
			path:   "d/f",
			always: true,
		},
		{
			name: "unsynced removal may be undone",
			setup: func(t *testing.T, s *Sim) {
				create(t, s, "f", []byte("x"), true, true)
				require.NoError(t, s.Remove("f"))
			},
			path:      "f",
			sometimes: true,
		},
		{
			name: "synced removal stays",
			setup: func(t *testing.T, s *Sim) {
				create(t, s, "f", []byte("x"), true, true)
				require.NoError(t, s.Remove("f"))
				require.NoError(t, s.SyncDir("."))
			},
			path:   "f",
			always: false,
		},
		{
			name: "synced RemoveAll stays",
			setup: func(t *testing.T, s *Sim) {
				require.NoError(t, s.Mkdir("d", 0o700))
				create(t, s, "d/f", []byte("x"), true, true)
				require.NoError(t, s.SyncDir("."))
				require.NoError(t, s.RemoveAll("d"))
				require.NoError(t, s.SyncDir("."))
			},
			path:   "d",
			always: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSim()
			tc.setup(t, s)
			o := observe(s, tc.path)
			switch {
			case tc.sometimes:
				assert.Positive(t, o.present, "never survived")
				assert.Positive(t, o.absent, "never vanished")
			case tc.always:
				assert.Zero(t, o.absent, "vanished")
			default:
				assert.Zero(t, o.present, "came back")
			}
		})
	}
}

// TestCrashSyncDirDoesNotSyncData: a synced name does not make the data
// durable, and an fsynced file's name is not durable without SyncDir.
func TestCrashSyncDirDoesNotSyncData(t *testing.T) {
	s := NewSim()
	create(t, s, "named", fill(100, 9), false, true)
	create(t, s, "data", fill(100, 9), true, false)
	c := s.CrashDurableOnly()
	require.True(t, exists(c, "named"))
	require.Empty(t, readOrNil(c, "named"))
	require.False(t, exists(c, "data"))
	c = s.CrashAll()
	require.Equal(t, fill(100, 9), readOrNil(c, "named"))
	require.Equal(t, fill(100, 9), readOrNil(c, "data"))
}

// TestCrashTempRename: temp+rename without fsync may leave old, new, empty
// or torn content; with fsync before the rename, only old or new; with
// the directory synced too, only new.
func TestCrashTempRename(t *testing.T) {
	oldData, newData := fill(2*page, 10), fill(3*page, 11)
	classify := func(got []byte) string {
		switch {
		case got == nil:
			return "missing"
		case bytes.Equal(got, oldData):
			return "old"
		case bytes.Equal(got, newData):
			return "new"
		case len(got) == 0:
			return "empty"
		case bytes.Count(got, []byte{0}) == len(got):
			return "nul"
		}
		pagesOf(t, got, newData)
		return "torn"
	}
	setup := func(t *testing.T) *Sim {
		s := NewSim()
		require.NoError(t, s.Mkdir("d", 0o700))
		require.NoError(t, s.SyncDir("."))
		create(t, s, "d/x", oldData, true, true)
		return s
	}
	run := func(s *Sim, seeds uint64) map[string]int {
		seen := map[string]int{}
		for seed := range seeds {
			seen[classify(readOrNil(s.Crash(seeded(seed)), "d/x"))]++
		}
		return seen
	}

	t.Run("not durable", func(t *testing.T) {
		s := setup(t)
		require.NoError(t, WriteFileAtomic(s, "d", "x", newData, 0o600, false, ".1"))
		seen := run(s, 400)
		t.Log(seen)
		for _, k := range []string{"old", "new", "empty", "torn", "nul"} {
			assert.Positive(t, seen[k], k)
		}
		assert.Zero(t, seen["missing"])
	})
	t.Run("fsync before rename", func(t *testing.T) {
		s := setup(t)
		// Crash just before the directory sync: the rename may or may not
		// have reached the disk, the data has.
		var before *Sim
		s.OnSync(func(op Op, name string) {
			if op == OpSyncDir {
				before = s.Snapshot()
			}
		})
		require.NoError(t, WriteFileAtomic(s, "d", "x", newData, 0o600, true, ".1"))
		require.NotNil(t, before)
		seen := run(before, 300)
		t.Log(seen)
		assert.Equal(t, 300, seen["old"]+seen["new"], seen)
		assert.Positive(t, seen["old"])
		assert.Positive(t, seen["new"])
		assert.Equal(t, map[string]int{"new": 300}, run(s, 300))
	})
}

// TestCrashRename: renames are atomic, within and across directories, and
// a synced directory rename moves its contents durably.
func TestCrashRename(t *testing.T) {
	t.Run("directory rename moves contents", func(t *testing.T) {
		s := NewSim()
		require.NoError(t, s.Mkdir("a", 0o700))
		require.NoError(t, s.SyncDir("."))
		create(t, s, "a/f", []byte("data"), true, true)
		require.NoError(t, s.Rename("a", "b"))
		for seed := range uint64(100) {
			c := s.Crash(seeded(seed))
			require.NotEqual(t, exists(c, "a/f"), exists(c, "b/f"), "seed %d: %v", seed, c.Tree())
		}
		require.NoError(t, s.SyncDir("."))
		for seed := range uint64(100) {
			c := s.Crash(seeded(seed))
			require.Equal(t, []string{"b/", "b/f"}, c.Tree())
			require.Equal(t, []byte("data"), readOrNil(c, "b/f"))
		}
	})
	t.Run("across directories, one side synced", func(t *testing.T) {
		for _, syncDir := range []string{"", "a", "b"} {
			s := NewSim()
			require.NoError(t, s.Mkdir("a", 0o700))
			require.NoError(t, s.Mkdir("b", 0o700))
			require.NoError(t, s.SyncDir("."))
			create(t, s, "a/f", []byte("data"), true, true)
			require.NoError(t, s.Rename("a/f", "b/f"))
			if syncDir != "" {
				require.NoError(t, s.SyncDir(syncDir))
			}
			seen := map[string]int{}
			for seed := range uint64(200) {
				c := s.Crash(seeded(seed))
				inA, inB := exists(c, "a/f"), exists(c, "b/f")
				require.NotEqual(t, inA, inB, "sync %q seed %d: %v", syncDir, seed, c.Tree())
				seen[fmt.Sprint(inB)]++
			}
			if syncDir == "" {
				assert.Len(t, seen, 2, "both outcomes")
			} else {
				assert.Equal(t, map[string]int{"true": 200}, seen, "synced %s", syncDir)
			}
		}
	})
	t.Run("new file renamed into another directory", func(t *testing.T) {
		// The create in a is committed with the rename when b is synced,
		// so the file is not resurrected as a/t.
		s := NewSim()
		require.NoError(t, s.Mkdir("a", 0o700))
		require.NoError(t, s.Mkdir("b", 0o700))
		require.NoError(t, s.SyncDir("."))
		create(t, s, "a/t", []byte("data"), true, false)
		require.NoError(t, s.Rename("a/t", "b/x"))
		require.NoError(t, s.SyncDir("b"))
		for seed := range uint64(100) {
			require.Equal(t, []string{"a/", "b/", "b/x"}, s.Crash(seeded(seed)).Tree())
		}
	})
	t.Run("RenameNoReplace of a temp directory", func(t *testing.T) {
		s := NewSim()
		require.NoError(t, s.Mkdir("tmp", 0o700))
		create(t, s, "tmp/log", []byte("rec"), true, true)
		require.NoError(t, s.SyncDir("."))
		require.NoError(t, s.Mkdir("empty", 0o700))
		require.ErrorIs(t, s.RenameNoReplace("tmp", "empty"), os.ErrExist)
		require.NoError(t, s.RenameNoReplace("tmp", "sess"))
		require.NoError(t, s.SyncDir("."))
		c := s.CrashDurableOnly()
		require.Equal(t, []string{"empty/", "sess/", "sess/log"}, c.Tree())
		require.Equal(t, []byte("rec"), readOrNil(c, "sess/log"))
	})
}

// TestCrashAllAndDurableOnly: CrashAll is the current state; after syncing
// every file and directory, every crash is the current state.
func TestCrashAllAndDurableOnly(t *testing.T) {
	s := NewSim()
	r := seeded(1)
	var files []string
	var open []File
	for i := range 40 {
		switch op := r.IntN(6); {
		case op == 0 || len(files) == 0:
			dir := "."
			if r.IntN(2) == 0 {
				dir = fmt.Sprintf("d%d", i)
				require.NoError(t, s.Mkdir(dir, 0o700))
			}
			name := join(dir, fmt.Sprintf("f%d", i))
			create(t, s, name, fill(r.IntN(3*page), byte(i)), r.IntN(2) == 0, r.IntN(2) == 0)
			files = append(files, name)
		case op == 1:
			f, err := s.OpenFile(files[r.IntN(len(files))], os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(int64(r.IntN(2*page))))
			open = append(open, f)
		case op == 2:
			n := files[r.IntN(len(files))]
			to := fmt.Sprintf("r%d", i)
			require.NoError(t, s.Rename(n, to))
			files = slices.DeleteFunc(files, func(x string) bool { return x == n })
			files = append(files, to)
		default:
			appendTo(t, s, files[r.IntN(len(files))], fill(r.IntN(2*page), byte(i)), r.IntN(2) == 0)
		}
	}
	snapshot := func(s *Sim) map[string]string {
		m := map[string]string{}
		for _, p := range s.Tree() {
			m[p] = string(readOrNil(s, p))
		}
		return m
	}
	cur := snapshot(s)
	require.Equal(t, cur, snapshot(s.CrashAll()))
	require.Equal(t, cur, snapshot(s.Snapshot()))
	require.Equal(t, cur, snapshot(s.Snapshot().CrashAll()))

	// Sync everything: nothing is pending any more.
	for _, f := range open {
		require.NoError(t, f.Sync())
	}
	for _, p := range s.Tree() {
		if p[len(p)-1] == '/' {
			require.NoError(t, s.SyncDir(p[:len(p)-1]))
			continue
		}
		f, err := s.OpenFile(p, os.O_RDONLY, 0)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	require.NoError(t, s.SyncDir("."))
	require.Equal(t, cur, snapshot(s.CrashDurableOnly()))
	for seed := range uint64(20) {
		require.Equal(t, cur, snapshot(s.Crash(seeded(seed))))
	}
}

// TestCrashIsDeterministicAndPreservesIdentity: the same seed gives the
// same state; inode numbers survive; s itself is not changed.
func TestCrashIsDeterministicAndPreservesIdentity(t *testing.T) {
	s := NewSim()
	create(t, s, "f", fill(page, 1), true, true)
	appendTo(t, s, "f", fill(5*page, 2), false)
	create(t, s, "g", fill(10, 3), false, false)
	before := s.Tree()
	content := readOrNil(s, "f")
	for seed := range uint64(50) {
		a, b := s.Crash(seeded(seed)), s.Crash(seeded(seed))
		require.Equal(t, a.Tree(), b.Tree())
		require.Equal(t, readOrNil(a, "f"), readOrNil(b, "f"))
		fa, err := a.Lstat("f")
		require.NoError(t, err)
		fo, err := s.Lstat("f")
		require.NoError(t, err)
		require.Equal(t, IdentityOf(fo), IdentityOf(fa))
	}
	require.Equal(t, before, s.Tree())
	require.Equal(t, content, readOrNil(s, "f"))

	// A crashed Sim is a working FS: new inodes do not reuse numbers.
	c := s.CrashAll()
	create(t, c, "h", []byte("x"), true, true)
	ids := map[Identity]string{}
	for _, p := range c.Tree() {
		fi, err := c.Lstat(p)
		require.NoError(t, err)
		require.NotContains(t, ids, IdentityOf(fi), p)
		ids[IdentityOf(fi)] = p
	}
}

// TestSnapshotIsIndependent: a snapshot keeps the pending state of its
// moment; later changes to either side do not leak.
func TestSnapshotIsIndependent(t *testing.T) {
	s := NewSim()
	create(t, s, "f", []byte("durable"), true, true)
	appendTo(t, s, "f", []byte("+pending"), false)
	snap := s.Snapshot()
	appendTo(t, s, "f", []byte("+later"), true)
	require.NoError(t, s.Remove("f"))
	require.NoError(t, s.SyncDir("."))

	require.Equal(t, []byte("durable+pending"), readOrNil(snap, "f"))
	require.Equal(t, []byte("durable"), readOrNil(snap.CrashDurableOnly(), "f"))
	require.Equal(t, []byte("durable+pending"), readOrNil(snap.CrashAll(), "f"))
	require.False(t, exists(s.CrashAll(), "f"))
	appendTo(t, snap, "f", []byte("!"), false)
	require.False(t, exists(s, "f"))
}

// TestCrashAtEverySyncPoint is the pattern the store's tests use: count the
// sync points of a workload, snapshot before each, crash each snapshot
// many times, and check that everything acknowledged survives. Here the
// workload is an append log with a datasync per record, and the check
// fails when a sync is skipped (through Faulty), which is the mutation
// check in miniature.
func TestCrashAtEverySyncPoint(t *testing.T) {
	const records = 20
	rec := func(i int) []byte { return append(fill(700+i*97, byte(i)), '\n') }
	// workload appends records, returning after each the snapshot taken
	// just before the sync of record i (nil if none) and how many records
	// were acknowledged when that sync point was reached.
	type point struct {
		snap  *Sim
		acked int
	}
	workload := func(t *testing.T, fsys FS, s *Sim) []point {
		var points []point
		acked := 0
		s.OnSync(func(Op, string) { points = append(points, point{s.Snapshot(), acked}) })
		require.NoError(t, fsys.Mkdir("sess", 0o700))
		require.NoError(t, fsys.SyncDir("."))
		f, err := fsys.OpenFile("sess/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		require.NoError(t, err)
		require.NoError(t, fsys.SyncDir("sess"))
		for i := range records {
			_, err := f.Write(rec(i))
			require.NoError(t, err)
			require.NoError(t, f.Datasync())
			acked++
		}
		require.NoError(t, f.Close())
		points = append(points, point{s.Snapshot(), acked})
		return points
	}
	check := func(points []point) (lost int) {
		for _, p := range points {
			var want []byte
			for i := range p.acked {
				want = append(want, rec(i)...)
			}
			for seed := range uint64(30) {
				got := readOrNil(p.snap.Crash(seeded(seed)), "sess/log")
				if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
					lost++
				}
			}
		}
		return lost
	}

	s := NewSim()
	points := workload(t, s, s)
	require.Len(t, points, 2+records+1)
	require.Equal(t, 2+records, s.SyncCount())
	require.Zero(t, check(points))

	// Mutation: each sync disabled in turn must be caught.
	for k := range 2 + records {
		s := NewSim()
		f := NewFaulty(s)
		f.Inject(Fault{Op: OpAnySync, After: k, Silent: true})
		points := workload(t, f, s)
		assert.Positive(t, check(points), "skipping sync %d went unnoticed", k)
	}
}

// TestSimConcurrent exercises the lock under -race: writers, syncers and
// crashers at once.
func TestSimConcurrent(t *testing.T) {
	s := NewSim()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			assert.NoError(t, s.Mkdir(name, 0o700))
			f, err := s.OpenFile(name+"/log", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
			if !assert.NoError(t, err) {
				return
			}
			for i := range 50 {
				_, err := f.Write(fill(300, byte(i)))
				assert.NoError(t, err)
				if i%5 == 0 {
					assert.NoError(t, f.Datasync())
					assert.NoError(t, s.SyncDir(name))
				}
				_, err = f.ReadAt(make([]byte, 10), 0)
				assert.NoError(t, err)
			}
			assert.NoError(t, f.Close())
		})
	}
	wg.Go(func() {
		for i := range 30 {
			c := s.Crash(seeded(uint64(i)))
			_ = c.Tree()
			_ = s.Snapshot()
			_ = s.SyncDir(".")
		}
	})
	wg.Wait()
	require.Len(t, s.Tree(), 8)
}

// TestCrashSpeed logs how long the workload of the brief takes: 60 appends
// of ~2 KiB with a datasync each, crashed 300 times.
func TestCrashSpeed(t *testing.T) {
	start := time.Now()
	s := NewSim()
	create(t, s, "log", nil, true, true)
	f, err := s.OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	for i := range 60 {
		_, err := f.Write(fill(2000+i, byte(i)))
		require.NoError(t, err)
		if i < 50 {
			require.NoError(t, f.Datasync())
		}
	}
	built := time.Since(start)
	for seed := range uint64(300) {
		_ = s.Crash(seeded(seed))
	}
	t.Logf("workload %v, 300 crashes %v", built, time.Since(start)-built)
}

func BenchmarkSimCrash(b *testing.B) {
	s := NewSim()
	f, _ := s.OpenFile("log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	for i := range 60 {
		_, _ = f.Write(fill(2000, byte(i)))
		if i < 50 {
			_ = f.Datasync()
		}
	}
	r := seeded(1)
	for b.Loop() {
		_ = s.Crash(r)
	}
}

func BenchmarkSimAppendDatasync(b *testing.B) {
	rec := fill(2000, 1)
	for b.Loop() {
		s := NewSim()
		f, _ := s.OpenFile("log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		for range 60 {
			_, _ = f.Write(rec)
			_ = f.Datasync()
		}
	}
}
