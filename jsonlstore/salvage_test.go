package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// salvageHistory returns the revisions History yields (a gap as its first
// revision, negated) and the error it ends with.
func salvageHistory(t *testing.T, st *Store, id session.SessionID) ([]int64, error) {
	t.Helper()
	var revs []int64
	for r, err := range st.History(context.Background(), id) {
		var ge *sessionstore.GapError
		switch {
		case errors.As(err, &ge):
			revs = append(revs, -int64(ge.First))
		case err != nil:
			return revs, err
		default:
			revs = append(revs, int64(r.Revision))
		}
	}
	return revs, nil
}

// salvageLines returns the log's lines and the offset of each.
func salvageLines(t *testing.T, path string) ([][]byte, []int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	var offs []int64
	var off int64
	for _, l := range lines {
		offs = append(offs, off)
		off += int64(len(l))
	}
	return lines, offs
}

// TestSalvageKeepsReadableRevisions: a damaged record in the middle of a
// delta chain costs that revision and the deltas that cannot be rebuilt
// without it, nothing else. Later revisions stay, numbers unchanged; the
// log records the gap; readers report it; every removed byte is in
// forensic/; the session takes appends again; verify calls it sound.
func TestSalvageKeepsReadableRevisions(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := toolSession(t, st, "sv", 40)
	lines, offs := salvageLines(t, path)
	// Find a delta with a full record some revisions after it.
	var k, nextFull int
	for i := 5; i < len(lines) && nextFull == 0; i++ {
		r, err := parseLine(lines[i][:len(lines[i])-1], 1<<20)
		require.NoError(t, err)
		switch {
		case k == 0 && r.Kind == record.KindDelta:
			k = i
		case k > 0 && r.Kind == record.KindFull:
			nextFull = i
		}
	}
	require.NotZero(t, nextFull, "the chain policy writes a full record within 40 revisions")
	toolFlip(t, path, offs[k]+int64(len(lines[k])/2))
	damaged, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = st.Repair(ctx, "sv", maintenance.RepairOptions{})
	var ce *sessionstore.CorruptionError
	require.ErrorAs(t, err, &ce, "without a mode, repair only reports")
	rep, err := st.Repair(ctx, "sv", maintenance.RepairOptions{Salvage: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Salvaged)
	first, last := uint64(k+1), uint64(nextFull) // revisions k+1 .. nextFull (1-based) are lost
	require.Equal(t, []maintenance.SalvagedGap{{First: first, Last: last, Reason: rep.Salvaged.Gaps[0].Reason, Forensic: rep.Salvaged.Gaps[0].Forensic}}, rep.Salvaged.Gaps)
	require.Equal(t, 40-int(last-first+1), rep.Salvaged.Kept)
	require.Zero(t, rep.Salvaged.Restored)
	require.Equal(t, uint64(40), rep.Revision)

	// The removed bytes are exactly the damaged record and the deltas on it.
	kept, err := os.ReadFile(filepath.Join(st.Dir(), rep.Salvaged.Gaps[0].Forensic))
	require.NoError(t, err)
	require.Equal(t, damaged[offs[k]:offs[nextFull]], kept)

	// The new log: the old lines before and after, byte for byte, and a
	// gap record between.
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(after, damaged[:offs[k]]))
	require.True(t, bytes.HasSuffix(after, damaged[offs[nextFull]:]))
	gapLine := after[offs[k] : len(after)-len(damaged[offs[nextFull]:])]
	m, payload, err := record.Parse(gapLine[:len(gapLine)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, record.KindGap, m.Kind)
	require.Equal(t, [2]uint64{first, last}, [2]uint64{m.Rev, m.Through()})
	g, err := record.ParseGap(payload)
	require.NoError(t, err)
	require.Equal(t, rep.Salvaged.Gaps[0].Forensic, g.Forensic)

	revs, err := salvageHistory(t, st, "sv")
	require.NoError(t, err)
	var want []int64
	for r := int64(1); r <= 40; r++ {
		switch {
		case r == int64(first):
			want = append(want, -r)
		case r > int64(first) && r <= int64(last):
		default:
			want = append(want, r)
		}
	}
	require.Equal(t, want, revs)
	_, err = st.LoadRevision(ctx, "sv", first+1)
	require.ErrorIs(t, err, sessionstore.ErrRevisionsMissing)
	rec, err := st.LoadRevision(ctx, "sv", last+1)
	require.NoError(t, err)
	require.Equal(t, last+1, rec.Revision)

	vr, err := st.Verify(ctx, "sv")
	require.NoError(t, err)
	require.True(t, vr.OK(), "%+v", vr)
	require.Contains(t, vr.Sessions[0].Notes[0].Message, "a repair set them aside")

	w, err := st.Acquire(ctx, "sv", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	latest, err := st.Load(ctx, "sv")
	require.NoError(t, err)
	rev, err := w.Append(ctx, 40, latest.Snapshot)
	require.NoError(t, err)
	require.Equal(t, uint64(41), rev)
	require.NoError(t, w.Release(ctx))

	// Compaction copies the gap like any record.
	crep, err := st.Compact(ctx, "sv", maintenance.CompactPolicy{KeepLast: 2}, 0)
	require.NoError(t, err)
	require.Empty(t, crep.Skipped)
	revs, err = salvageHistory(t, st, "sv")
	require.NoError(t, err)
	require.Equal(t, append(want, 41), revs)
}

// TestSalvageDuplicatedTail: the last lines of a log copied again at the
// end (a bad `cat log >> log`) are copies: salvage drops them and keeps
// everything else — also a revision an older program appended on top.
func TestSalvageDuplicatedTail(t *testing.T) {
	ctx := context.Background()
	for _, withOnTop := range []bool{false, true} {
		st := openTestStore(t)
		path := toolSession(t, st, "dup", 16)
		clean, err := os.ReadFile(path)
		require.NoError(t, err)
		lines, _ := salvageLines(t, path)
		dup := append(bytes.Clone(clean), bytes.Join(lines[14:], nil)...)
		want := bytes.Clone(clean)
		if withOnTop {
			// Revision 17, a full record, as a program without the
			// sequence check at takeover appended after the copies.
			r16, err := parseLine(lines[15][:len(lines[15])-1], 1<<20)
			require.NoError(t, err)
			rec, err := st.Load(ctx, "dup")
			require.NoError(t, err)
			payload, err := adapter.EncodeSnapshot("dup", rec.Snapshot, 0)
			require.NoError(t, err)
			m := r16.Meta
			m.Rev, m.Kind, m.Version, m.Gen = 17, record.KindFull, record.VersionOf(record.KindFull), r16.Gen+1
			l17 := record.Encode(m, payload)
			dup = append(dup, l17...)
			want = append(want, l17...)
		}
		require.NoError(t, os.WriteFile(path, dup, 0o600))
		_, err = st.TryAcquire(ctx, "dup", sessionstore.AcquireOptions{})
		require.ErrorIs(t, err, sessionstore.ErrCorrupt, "a holder never builds on a duplicated tail")
		require.ErrorContains(t, err, "revision 16", "the duplicate is named")

		rep, err := st.Repair(ctx, "dup", maintenance.RepairOptions{Salvage: true})
		require.NoError(t, err)
		require.Equal(t, 2, rep.Salvaged.DuplicatesRemoved)
		require.Empty(t, rep.Salvaged.Gaps)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, want, after, "the log without the copies")
		revs, err := salvageHistory(t, st, "dup")
		require.NoError(t, err)
		require.Len(t, revs, len(bytes.SplitAfter(bytes.TrimSuffix(want, []byte("\n")), []byte("\n"))))
	}
}

// TestSalvageEndsReadable: when the last revisions are lost (the last
// record damaged while summary.json vouches for it), the log ends with a
// gap and a full record restoring the last readable revision, so the
// session goes on; a log a newer program wrote to is never salvaged.
func TestSalvageEndsReadable(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	path := toolSession(t, st, "end", 6)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	before, err := st.LoadRevision(ctx, "end", 5)
	require.NoError(t, err)
	toolFlip(t, path, toolLineOffset(data, 5)+40)

	rep, err := st.Repair(ctx, "end", maintenance.RepairOptions{Salvage: true})
	require.NoError(t, err)
	require.Equal(t, []uint64{6, 6}, []uint64{rep.Salvaged.Gaps[0].First, rep.Salvaged.Gaps[0].Last})
	require.Equal(t, uint64(7), rep.Salvaged.Restored)
	rec, err := st.Load(ctx, "end")
	require.NoError(t, err)
	require.Equal(t, uint64(7), rec.Revision)
	require.Equal(t, before.Snapshot, rec.Snapshot, "revision 7 restores revision 5")
	revs, err := salvageHistory(t, st, "end")
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5, -6, 7}, revs)

	// A newer program's records are never removed.
	st2, _ := toolStore(t, Options{}, "unknown-kind-built-on")
	_, err = st2.Repair(ctx, "unknown-kind-built-on", maintenance.RepairOptions{Salvage: true})
	require.ErrorIs(t, err, sessionstore.ErrSchemaTooNew)
}

// TestSalvageFixtures: every damaged fixture salvages to a log that
// verifies as sound, keeps every revision it could read, and sets aside
// only what it could not.
func TestSalvageFixtures(t *testing.T) {
	ctx := context.Background()
	for _, name := range toolFixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			st, root := toolStore(t, Options{}, name)
			id := session.SessionID(name)
			readable := map[uint64]bool{}
			for rev := uint64(1); rev <= 30; rev++ {
				if _, err := st.LoadRevision(ctx, id, rev); err == nil {
					readable[rev] = true
				}
			}
			rep, err := st.Repair(ctx, id, maintenance.RepairOptions{Salvage: true})
			if errors.Is(err, sessionstore.ErrSchemaTooNew) {
				return // never salvaged
			}
			var ce *sessionstore.CorruptionError
			if errors.As(err, &ce) && len(readable) == 0 {
				return // nothing readable to keep
			}
			require.NoError(t, err)
			vr, err := st.Verify(ctx, id)
			require.NoError(t, err)
			require.True(t, vr.OK(), "%+v", vr.Sessions)
			for rev := range readable {
				_, err := st.LoadRevision(ctx, id, rev)
				require.NoError(t, err, "revision %d was readable before the salvage", rev)
			}
			for _, f := range rep.ForensicFiles {
				_, err := os.Stat(filepath.Join(root, f))
				require.NoError(t, err)
			}
		})
	}
}

// salvagedSession writes session id with n revisions into st, flips a bit
// in the first full record after revision 1 that another full record
// follows, and salvages it: the damaged record and the deltas on it
// become one gap record. It returns the gap.
func salvagedSession(t *testing.T, st *Store, id session.SessionID, n int) maintenance.SalvagedGap {
	t.Helper()
	path := toolSession(t, st, id, n)
	lines, offs := salvageLines(t, path)
	var k, nextFull int
	for i := 1; i < len(lines) && nextFull == 0; i++ {
		r, err := parseLine(lines[i][:len(lines[i])-1], 1<<20)
		require.NoError(t, err)
		if r.Kind == record.KindFull {
			if k == 0 {
				k = i
			} else {
				nextFull = i
			}
		}
	}
	require.NotZero(t, nextFull, "the chain policy writes two full records after the first within %d revisions", n)
	toolFlip(t, path, offs[k]+int64(len(lines[k])/2))
	rep, err := st.Repair(context.Background(), id, maintenance.RepairOptions{Salvage: true})
	require.NoError(t, err)
	require.Len(t, rep.Salvaged.Gaps, 1)
	g := rep.Salvaged.Gaps[0]
	require.Equal(t, [2]uint64{uint64(k + 1), uint64(nextFull)}, [2]uint64{g.First, g.Last})
	return g
}

// TestCompactSalvagedLog: compacting a salvaged log, wherever the cut
// falls — before the gap, inside it, just after it (the gap the last
// record trimmed), past it — archives the gap as the revisions it stands
// for: the manifest names them, and every revision readable before is
// readable after; verify calls the session sound, and repair (plain or
// salvaging) finds nothing to do.
func TestCompactSalvagedLog(t *testing.T) {
	ctx := context.Background()
	const n = 24
	src := openUncheckedStore(t)
	g := salvagedSession(t, src, "sv", n)
	want, err := salvageHistory(t, src, "sv")
	require.NoError(t, err)
	readable := map[uint64]sessionstore.Record{}
	for rev := uint64(1); rev <= n; rev++ {
		if rec, err := src.LoadRevision(ctx, "sv", rev); err == nil {
			readable[rev] = rec
		} else {
			require.ErrorIs(t, err, sessionstore.ErrRevisionsMissing)
		}
	}
	require.Len(t, readable, n-int(g.Last-g.First+1))

	for keep := 1; keep <= n; keep++ {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			st := openTestStore(t)
			require.NoError(t, os.CopyFS(filepath.Join(st.Dir(), "sv"), os.DirFS(filepath.Join(src.Dir(), "sv"))))
			crep, err := st.Compact(ctx, "sv", maintenance.CompactPolicy{KeepLast: keep}, 0)
			require.NoError(t, err)
			m, err := archive.ReadManifest(st.fs, "sv")
			require.NoError(t, err)
			for _, seg := range m.Segments {
				if seg.First <= g.First && g.First <= seg.Last {
					require.GreaterOrEqual(t, seg.Last, g.Last, "the segment holding the gap names all its revisions: %+v", seg)
				}
			}
			if crep.Skipped == "" {
				require.Equal(t, int64(crep.FirstKept-1), crep.RevisionsTrimmed, "%+v", crep)
			}

			vr, err := st.Verify(ctx, "sv")
			require.NoError(t, err)
			require.True(t, vr.OK(), "%+v", vr.Sessions)
			revs, err := salvageHistory(t, st, "sv")
			require.NoError(t, err)
			require.Equal(t, want, revs)
			for rev, before := range readable {
				rec, err := st.LoadRevision(ctx, "sv", rev)
				require.NoError(t, err, "revision %d", rev)
				require.Equal(t, before.Snapshot, rec.Snapshot, "revision %d", rev)
			}
			_, err = st.LoadRevision(ctx, "sv", g.Last)
			require.ErrorIs(t, err, sessionstore.ErrRevisionsMissing)

			_, err = st.Repair(ctx, "sv", maintenance.RepairOptions{})
			require.NoError(t, err)
			rep, err := st.Repair(ctx, "sv", maintenance.RepairOptions{Salvage: true})
			require.NoError(t, err)
			require.Nil(t, rep.Salvaged, "nothing to set aside")
		})
	}
}

// TestRepairAfterSalvagingADamagedPage: a page blob truncated or flipped
// costs the revisions whose full records keep messages in it; salvage
// sets them aside and reports the damage it found (not "no corruption").
// The forensic copy of those records still references the page, so it
// stays; repair afterwards succeeds (it failed forever, reading the
// damaged page to collect blobs), and so does salvage, which finds
// nothing more. A blob nothing references is kept while a page the
// forensic copies reference cannot be read (its references are unknown),
// and the collection says why.
func TestRepairAfterSalvagingADamagedPage(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"truncated", "flipped"} {
		t.Run(damage, func(t *testing.T) {
			st := openTestStoreWith(t, Options{MaxRecordBytes: pagedCap}) // sound again once salvaged
			writePaged(t, st, "pg", 60, rand.New(rand.NewPCG(3, 3)))
			names, err := blobfile.Names(st.fs, "pg")
			require.NoError(t, err)
			require.NotEmpty(t, names, "pages")
			page := filepath.Join(st.Dir(), "pg", BlobDir, names[0])
			data, err := os.ReadFile(page)
			require.NoError(t, err)
			switch damage {
			case "truncated":
				data = data[:len(data)/2]
			case "flipped":
				data[len(data)/2] ^= 1
			}
			require.NoError(t, os.WriteFile(page, data, 0o600))
			orphan := randomImage(9, 32<<10)
			require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "pg", BlobDir, hashOf(orphan)), orphan, 0o600))

			rep, err := st.Repair(ctx, "pg", maintenance.RepairOptions{Salvage: true})
			require.NoError(t, err)
			require.NotNil(t, rep.Salvaged)
			require.NotEmpty(t, rep.Salvaged.Gaps)
			require.NotNil(t, rep.Found, "salvage reports the damage it found")
			require.Equal(t, "pg/"+LogFile, rep.Found.File)
			require.Equal(t, rep.Salvaged.Gaps[0].First, rep.Found.Revision, "the first revision set aside")
			require.Contains(t, rep.Found.Message, "pg/"+BlobDir+"/"+names[0])
			require.NotEmpty(t, rep.Blobs.Kept, "nothing collected while a page is unreadable")
			require.True(t, blobExists(t, st, "pg", orphan))
			_, err = os.Stat(page)
			require.NoError(t, err, "the forensic copy references the page")

			rep, err = st.Repair(ctx, "pg", maintenance.RepairOptions{})
			require.NoError(t, err, "a sound log repairs")
			require.Nil(t, rep.Found)
			require.Contains(t, rep.Blobs.Kept, names[0])
			rep, err = st.Repair(ctx, "pg", maintenance.RepairOptions{Salvage: true})
			require.NoError(t, err)
			require.Nil(t, rep.Salvaged, "nothing more to set aside")
			require.Nil(t, rep.Found)
			_, err = st.Load(ctx, "pg")
			require.NoError(t, err)
		})
	}
}

// TestRepairCorrectsOldGapManifest: an archive written by a release whose
// compaction took a segment's last revision as its first plus its record
// count less one — wrong for a segment holding a gap record, whose
// revisions the archives then seem to miss ("archives end at revision 9
// but the log starts at 17") — is corrected by repair, plain or
// salvaging: the segment is listed, and named, by the revisions it holds,
// and every revision readable before the compaction reads back the same.
func TestRepairCorrectsOldGapManifest(t *testing.T) {
	ctx := context.Background()
	const n = 24
	src := openUncheckedStore(t)
	g := salvagedSession(t, src, "sv", n)
	want, err := salvageHistory(t, src, "sv")
	require.NoError(t, err)

	aged := 0
	for keep := 1; keep <= n; keep++ {
		for _, salvage := range []bool{false, true} {
			t.Run(fmt.Sprintf("keep=%d/salvage=%v", keep, salvage), func(t *testing.T) {
				st := openUncheckedStore(t)
				require.NoError(t, os.CopyFS(filepath.Join(st.Dir(), "sv"), os.DirFS(filepath.Join(src.Dir(), "sv"))))
				_, err := st.Compact(ctx, "sv", maintenance.CompactPolicy{KeepLast: keep}, 0)
				require.NoError(t, err)
				old := ageGapManifest(t, st, "sv", g)
				if old == nil {
					t.Skip("no archived segment holds the gap")
				}
				aged++
				vr, err := st.Verify(ctx, "sv")
				require.NoError(t, err)
				require.False(t, vr.OK(), "the old manifest hides archived revisions")

				rep, err := st.Repair(ctx, "sv", maintenance.RepairOptions{Salvage: salvage})
				require.NoError(t, err)
				require.Len(t, rep.Archives, 1, "%+v", rep)
				fix := rep.Archives[0]
				require.Equal(t, old.File, fix.Old)
				require.Equal(t, old.Last, fix.Listed)
				require.GreaterOrEqual(t, fix.Last, g.Last)
				require.Nil(t, rep.Salvaged, "nothing set aside")
				require.NoFileExists(t, filepath.Join(st.Dir(), "sv", ArchiveDir, fix.Old))
				require.FileExists(t, filepath.Join(st.Dir(), "sv", ArchiveDir, fix.New))

				vr, err = st.Verify(ctx, "sv")
				require.NoError(t, err)
				require.True(t, vr.OK(), "%+v", vr.Sessions)
				revs, err := salvageHistory(t, st, "sv")
				require.NoError(t, err)
				require.Equal(t, want, revs)
				rep, err = st.Repair(ctx, "sv", maintenance.RepairOptions{})
				require.NoError(t, err)
				require.Empty(t, rep.Archives, "corrected once")
			})
		}
	}
	require.Positive(t, aged, "some compaction archived the gap")
}

// ageGapManifest rewrites session id's archive as a release before the
// fix wrote it: the segment holding gap g listed, and named, as ending at
// its first revision plus its records less one. It returns the segment as
// now listed, nil when no archived segment holds the gap.
func ageGapManifest(t *testing.T, st *Store, id session.SessionID, g maintenance.SalvagedGap) *archive.Segment {
	t.Helper()
	m, err := archive.ReadManifest(st.fs, id)
	require.NoError(t, err)
	for i, seg := range m.Segments {
		if seg.First > g.First || g.First > seg.Last {
			continue
		}
		aged := seg
		aged.Last = seg.First + uint64(seg.Records) - 1
		require.Less(t, aged.Last, seg.Last)
		aged.File = archive.SegmentName(aged.First, aged.Last)
		dir := filepath.Join(st.Dir(), string(id), ArchiveDir)
		require.NoError(t, os.Rename(filepath.Join(dir, seg.File), filepath.Join(dir, aged.File)))
		m.Segments[i] = aged
		require.NoError(t, archive.WriteManifest(st.fs, id, m))
		return &aged
	}
	return nil
}
