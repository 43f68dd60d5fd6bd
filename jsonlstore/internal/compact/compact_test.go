package compact

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/archive"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/roottest"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// The tests here drive compaction through Holder alone, as the facade's
// writer does; the crash, kill, fault and sync-mutation suites of
// compaction run on a whole store, in package jsonlstore.

// testHolder is a writer as compaction sees it: the log it appends to,
// and what compaction told it.
type testHolder struct {
	log       vfs.File
	id        vfs.Identity
	size      int64
	rev       uint64
	cut       int64
	failed    error
	summaries []*record.Rec
	collected int
}

func newTestHolder(t *testing.T, root *layout.Root, id session.SessionID, rev uint64) *testHolder {
	t.Helper()
	f, err := root.FS.OpenFile(layout.LogPath(id), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	h := &testHolder{log: f, id: vfs.IdentityOf(fi), size: fi.Size(), rev: rev}
	t.Cleanup(func() { _ = h.log.Close() })
	return h
}

func (h *testHolder) Log() (vfs.Identity, int64, uint64) { return h.id, h.size, h.rev }

func (h *testHolder) Replaced(f vfs.File, id vfs.Identity, cut int64) {
	_ = h.log.Close()
	h.log, h.id = f, id
	h.size -= cut
	h.cut += cut
}

func (h *testHolder) Fail(err error) { h.failed = err }

func (h *testHolder) WriteSummary(last *record.Rec, _ summary.Summary) {
	h.summaries = append(h.summaries, last)
}

func (h *testHolder) CollectBlobs(context.Context) (maintenance.BlobCollection, error) {
	h.collected++
	return maintenance.BlobCollection{}, nil
}

// TestRunThroughHolder: a compaction trims the revisions the policy does
// not keep into a segment the manifest lists, replaces the log with the
// kept records byte for byte, and tells the holder: the new log (its
// identity, and how much shorter it is), its summary, a blob collection.
func TestRunThroughHolder(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("c1")
	root, log := roottest.New(t, id, 5)
	before := log.Bytes
	h := newTestHolder(t, root, id, 5)

	rep, err := Run(ctx, root, id, h, maintenance.CompactPolicy{KeepLast: 2}, maintenance.CompactReport{ID: id})
	require.NoError(t, err)
	require.NoError(t, h.failed)
	require.Equal(t, int64(3), rep.RevisionsTrimmed)
	require.Equal(t, uint64(4), rep.FirstKept)
	require.Equal(t, uint64(5), rep.Latest)
	require.Equal(t, archive.Dir(id)+"/"+archive.SegmentName(1, 3), rep.Segment)
	require.Equal(t, rep.LogBytesBefore-rep.LogBytesAfter, h.cut)

	after, err := os.ReadFile(root.Abs(layout.LogPath(id)))
	require.NoError(t, err)
	require.Equal(t, before[h.cut:], after, "the kept records, byte for byte")
	fi, err := root.FS.Lstat(layout.LogPath(id))
	require.NoError(t, err)
	require.Equal(t, vfs.IdentityOf(fi), h.id, "the holder appends to the new log")
	require.Equal(t, int64(len(after)), h.size)

	m, err := archive.ReadManifest(root.FS, id)
	require.NoError(t, err)
	require.Len(t, m.Segments, 1)
	require.Equal(t, uint64(1), m.Segments[0].First)
	require.Equal(t, uint64(3), m.Segments[0].Last)
	require.NoError(t, archive.VerifySegment(root.FS, rep.Segment, m.Segments[0]))

	require.Len(t, h.summaries, 1, "summary.json is refreshed for the new log")
	require.Equal(t, uint64(5), h.summaries[0].Rev)
	v, err := logfile.Open(root.FS, id, root.MaxRecordBytes)
	require.NoError(t, err)
	last, _, err := logfile.Latest(root.FS, id, v)
	require.NoError(t, v.Close())
	require.NoError(t, err)
	require.Equal(t, last.Offset, h.summaries[0].Offset, "the summary names the last record where the new log has it")
	require.Equal(t, 1, h.collected)
}

// TestRunRefusesChangedLog: a log that is not the one its holder last
// left (another size) is not compacted, and nothing changes.
func TestRunRefusesChangedLog(t *testing.T) {
	const id = session.SessionID("c2")
	root, _ := roottest.New(t, id, 4)
	h := newTestHolder(t, root, id, 4)
	h.size--
	_, err := Run(context.Background(), root, id, h, maintenance.CompactPolicy{KeepLast: 1}, maintenance.CompactReport{ID: id})
	require.ErrorContains(t, err, "log changed under its holder")
	_, err = root.FS.Lstat(archive.Dir(id))
	require.ErrorIs(t, err, os.ErrNotExist, "no archive was written")
	require.Zero(t, h.cut)
	require.Empty(t, h.summaries)
	require.Zero(t, h.collected)
}

// TestDryRunMatchesRun: a dry run reports what a compaction then does,
// and writes nothing.
func TestDryRunMatchesRun(t *testing.T) {
	ctx := context.Background()
	const id = session.SessionID("c3")
	root, _ := roottest.New(t, id, 6)
	p := maintenance.CompactPolicy{KeepLast: 3}
	dry, err := DryRun(ctx, root, id, maintenance.CompactPolicy{KeepLast: 3, DryRun: true}, maintenance.CompactReport{ID: id, DryRun: true})
	require.NoError(t, err)
	_, err = root.FS.Lstat(archive.Dir(id))
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run writes nothing")

	rep, err := Run(ctx, root, id, newTestHolder(t, root, id, 6), p, maintenance.CompactReport{ID: id})
	require.NoError(t, err)
	dry.DryRun, dry.ArchiveBytes = false, rep.ArchiveBytes // what only writing the segment tells
	require.Equal(t, rep, dry)
}

// TestValidate refuses negative policies, and only them.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name    string
		p       maintenance.CompactPolicy
		wantErr bool
	}{
		{"none", maintenance.CompactPolicy{}, false},
		{"keep last", maintenance.CompactPolicy{KeepLast: 3}, false},
		{"keep since", maintenance.CompactPolicy{KeepSince: time.Hour}, false},
		{"negative keep last", maintenance.CompactPolicy{KeepLast: -1}, true},
		{"negative keep since", maintenance.CompactPolicy{KeepSince: -time.Second}, true},
	} {
		err := Validate(c.p)
		require.Equal(t, c.wantErr, err != nil, "%s: %v", c.name, err)
	}
}
