package jsonlstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// damageFS damages what is written into the first file opened for
// writing whose name match accepts: damage gets each buffer written and
// the file offset it goes to, and returns what really reaches the file
// (the caller is told the whole buffer was written). The source's bytes
// are left as they are: the damage is in the destination only.
type damageFS struct {
	vfs.FS
	match  func(name string) bool
	damage func(p []byte, off int64) []byte
	hit    atomic.Bool
}

func (d *damageFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 || !d.match(name) || !d.hit.CompareAndSwap(false, true) {
		return f, err
	}
	return &damageFile{File: f, damage: d.damage}, nil
}

type damageFile struct {
	vfs.File
	damage func(p []byte, off int64) []byte
	off    int64
}

func (f *damageFile) Write(p []byte) (int, error) {
	q := f.damage(bytes.Clone(p), f.off)
	f.off += int64(len(p))
	if _, err := f.File.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flipAt flips the bits of the byte at file offset at.
func flipAt(at int64) func(p []byte, off int64) []byte {
	return func(p []byte, off int64) []byte {
		if at >= off && at < off+int64(len(p)) {
			p[at-off] ^= 0xff
		}
		return p
	}
}

// keepFirst writes only the first n bytes of the file: a copy cut short.
func keepFirst(n int64) func(p []byte, off int64) []byte {
	return func(p []byte, off int64) []byte {
		return p[:max(0, min(int64(len(p)), n-off))]
	}
}

// TestBackupRefusesDamagedCopy: a full backup whose copy of a session
// lands damaged in the destination — a byte flipped in a log record (the
// first, or the last, which alone would look like a torn append), in an
// archive segment, in a blob, in settings.json; a blob cut short of the
// size its reference claims — refuses that copy: the report is not OK and
// names the session as not published, the destination holds no such
// session (nor its temporary directory), and every other session is
// published whole. What finds the damage is the read-back of the file
// written (its bytes differ from those written), not the check of its
// records, which reads the source's bytes as they are copied. A second
// backup, through an undamaged file system, publishes it.
func TestBackupRefusesDamagedCopy(t *testing.T) {
	ctx := context.Background()
	src := openTestStoreWith(t, Options{BlobThreshold: 1024})
	bkGrow(t, src, "lg", 4, 0)
	bkGrow(t, src, "ar", 6, 0)
	_, err := src.Compact(ctx, "ar", maintenance.CompactPolicy{KeepLast: 2}, 0)
	require.NoError(t, err)
	bkGrow(t, src, "ar", 1, 0)
	bkGrow(t, src, "bl", 6, 1)
	blobs, err := os.ReadDir(filepath.Join(src.Dir(), "bl", BlobDir))
	require.NoError(t, err)
	require.NotEmpty(t, blobs, "session bl keeps content in blobs")
	segs, err := filepath.Glob(filepath.Join(src.Dir(), "ar", ArchiveDir, "0*"))
	require.NoError(t, err)
	require.NotEmpty(t, segs, "session ar has archive segments")
	logSize := logSize(t, src, "lg")

	// staged matches session id's file under its temporary directory
	// whose name (within the session) passes file.
	staged := func(id session.SessionID, file func(rest string) bool) func(string) bool {
		return func(name string) bool {
			rest, ok := strings.CutPrefix(name, layout.TmpDirPrefix+string(id)+"-")
			if !ok {
				return false
			}
			_, rest, ok = strings.Cut(rest, "/")
			return ok && file(rest)
		}
	}
	isLog := func(rest string) bool { return rest == LogFile }
	isSegment := func(rest string) bool {
		name, ok := strings.CutPrefix(rest, ArchiveDir+"/")
		return ok && strings.HasPrefix(name, "0")
	}
	isBlob := func(rest string) bool { return strings.HasPrefix(rest, BlobDir+"/") }
	isSettings := func(rest string) bool { return rest == SettingsFile }
	_, err = os.Stat(filepath.Join(src.Dir(), "lg", SettingsFile))
	require.NoError(t, err, "session lg records its cap")
	for _, c := range []struct {
		name   string
		id     session.SessionID
		match  func(string) bool
		damage func(p []byte, off int64) []byte
	}{
		{"log record", "lg", staged("lg", isLog), flipAt(20)},
		{"last log record", "lg", staged("lg", isLog), flipAt(logSize - 20)},
		{"archive segment", "ar", staged("ar", isSegment), flipAt(40)},
		{"blob", "bl", staged("bl", isBlob), flipAt(100)},
		{"blob cut short", "bl", staged("bl", isBlob), keepFirst(200)},
		{"settings", "lg", staged("lg", isSettings), flipAt(3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := os.OpenRoot(dir)
			require.NoError(t, err)
			defer root.Close()
			dfs := &damageFS{FS: vfs.OS(root), match: c.match, damage: c.damage}
			dst := newStore(dir, root, dfs, fsLeaser{}, Options{})
			defer dst.Close()
			var rep maintenance.BackupReport
			_, err = src.offline().Backup(ctx, dst.offline(), nil, src.forSessions, maintenance.BackupOptions{}, &rep)
			require.NoError(t, err)
			require.True(t, dfs.hit.Load(), "nothing was damaged")
			require.False(t, rep.OK(), "%+v", rep)
			require.Contains(t, rep.Skipped[string(c.id)], "not published")
			require.Contains(t, rep.Skipped[string(c.id)], "were written", "the read-back finds the damage")
			require.Len(t, rep.Sessions, 2)
			for _, sb := range rep.Sessions {
				require.NotEqual(t, c.id, sb.ID)
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasPrefix(e.Name(), layout.TmpDirPrefix), "left behind: %s", e.Name())
			}
			_, err = os.Lstat(filepath.Join(dir, string(c.id)))
			require.True(t, errors.Is(err, fs.ErrNotExist), "the damaged copy was published: %v", err)

			// The others are published whole; a second backup, undamaged,
			// publishes the session refused.
			check, err := Open(dir, Options{})
			require.NoError(t, err)
			defer check.Close()
			for _, id := range []session.SessionID{"lg", "ar", "bl"} {
				if id != c.id {
					bkSameAs(t, src, check, id)
				}
			}
			rep, err = src.Backup(ctx, dir)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
			require.Len(t, rep.Sessions, 1)
			bkSameAs(t, src, check, c.id)
			vr, err := check.Verify(ctx)
			require.NoError(t, err)
			require.True(t, vr.OK(), "%+v", vr)
		})
	}
}

// TestBackupCopiesSettings: a full backup copies a session's
// settings.json, the record cap its records were written under, so that
// a reader of the copy with a smaller cap of its own reads records larger
// than that cap.
func TestBackupCopiesSettings(t *testing.T) {
	ctx := context.Background()
	const bigCap, small = 4 << 20, 256 << 10
	src := openTestStoreWith(t, Options{MaxRecordBytes: bigCap})
	writeWide(t, src, "big")
	reading, err := Open(src.Dir(), Options{MaxRecordBytes: small})
	require.NoError(t, err)
	_, err = reading.Load(ctx, "big")
	require.NoError(t, err, "the source reads under the recorded cap")
	require.NoError(t, reading.Close())
	want, err := os.ReadFile(filepath.Join(src.Dir(), "big", SettingsFile))
	require.NoError(t, err)

	dest := filepath.Join(t.TempDir(), "copy")
	rep, err := src.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	got, err := os.ReadFile(filepath.Join(dest, "big", SettingsFile))
	require.NoError(t, err, "settings.json was not copied")
	require.Equal(t, want, got)
	reader, err := Open(dest, Options{MaxRecordBytes: small})
	require.NoError(t, err)
	defer reader.Close()
	_, err = reader.Load(ctx, "big")
	require.NoError(t, err)
	bkSameAs(t, src, reader, "big")
}

// TestBackupCopiesDamagedSource: a session damaged in the source (a blob
// shorter than its reference claims; a log record in the middle of the
// log with a byte flipped, which the check of the records finds in the
// source's bytes as they are copied) is copied as it is, byte for byte,
// and published with its problems in the report: the backup keeps all
// the session still holds. Only a copy that differs from what was read is
// refused (TestBackupRefusesDamagedCopy).
func TestBackupCopiesDamagedSource(t *testing.T) {
	ctx := context.Background()
	src := openUncheckedStoreWith(t, Options{BlobThreshold: 1024})
	bkGrow(t, src, "lg", 4, 0)
	bkGrow(t, src, "bl", 6, 1)
	bkGrow(t, src, "mid", 6, 0)
	blobs, err := os.ReadDir(filepath.Join(src.Dir(), "bl", BlobDir))
	require.NoError(t, err)
	require.NotEmpty(t, blobs, "session bl keeps content in blobs")
	cut := filepath.Join(src.Dir(), "bl", BlobDir, blobs[0].Name())
	require.NoError(t, os.Truncate(cut, 200))
	midLog := filepath.Join(src.Dir(), "mid", LogFile)
	b, err := os.ReadFile(midLog)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x01 // a record in the middle: valid ones follow it
	require.NoError(t, os.WriteFile(midLog, b, 0o644))

	dest := filepath.Join(t.TempDir(), "copy")
	rep, err := src.Backup(ctx, dest)
	require.NoError(t, err)
	require.False(t, rep.OK(), "the copy holds the source's damage: %+v", rep)
	require.NotContains(t, rep.Skipped, "bl", "a faithful copy of a damaged source is published")
	require.NotContains(t, rep.Skipped, "mid", "a faithful copy of a damaged source is published")
	require.Len(t, rep.Sessions, 3)
	problems := map[session.SessionID][]sessionstore.Finding{}
	for _, sr := range rep.Verify.Sessions {
		problems[sr.ID] = sr.Problems
	}
	require.NotEmpty(t, problems["mid"], "the damaged record is reported: %+v", rep.Verify)
	require.Equal(t, LogFile, filepath.Base(problems["mid"][0].File))
	require.NotEmpty(t, problems["bl"], "the damaged blob is reported: %+v", rep.Verify)
	require.Empty(t, problems["lg"])
	for _, f := range []struct {
		id   session.SessionID
		name string
	}{{"bl", LogFile}, {"bl", BlobDir + "/" + blobs[0].Name()}, {"mid", LogFile}} {
		want, err := os.ReadFile(filepath.Join(src.Dir(), string(f.id), f.name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dest, string(f.id), f.name))
		require.NoError(t, err, "%s was not copied", f.name)
		require.Equal(t, want, got, "%s of %s is not the source's bytes", f.name, f.id)
	}
	check, err := Open(dest, Options{})
	require.NoError(t, err)
	defer check.Close()
	bkSameAs(t, src, check, "lg")
	vr, err := check.Verify(ctx)
	require.NoError(t, err)
	require.False(t, vr.OK(), "the backup's verify reports the source's damage")
}

// TestBackupIncrementalRaisesCap: a session whose source raised its
// record cap after the last backup (a takeover by a store with a larger
// cap, then a record above the old cap) is brought up to date with its
// settings.json raised first, so a reader of the backup whose own cap is
// the old one reads the new record.
func TestBackupIncrementalRaisesCap(t *testing.T) {
	ctx := context.Background()
	const small, bigCap = 256 << 10, 4 << 20
	src := openTestStoreWith(t, Options{MaxRecordBytes: small})
	bkGrow(t, src, "grow", 3, 0)
	dest := filepath.Join(t.TempDir(), "copy")
	rep, err := src.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)

	big, err := Open(src.Dir(), Options{MaxRecordBytes: bigCap})
	require.NoError(t, err)
	defer big.Close()
	h, err := sessionstore.Open(ctx, big, "grow", sessionstore.HandleOptions{})
	require.NoError(t, err)
	msg, _ := sessiontest.WideToolCall(2 << 20)
	_, err = h.Add(ctx, msg)
	require.NoError(t, err)
	require.NoError(t, h.Close(ctx))

	rep, err = big.Backup(ctx, dest)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	require.Len(t, rep.Sessions, 1)
	require.Equal(t, maintenance.BackupAppended, rep.Sessions[0].Action)
	reader, err := Open(dest, Options{MaxRecordBytes: small})
	require.NoError(t, err)
	defer reader.Close()
	got, err := layout.RecordedCap(reader.fs, layout.SessionDir("grow"))
	require.NoError(t, err)
	require.Equal(t, bigCap, got, "the backup records the source's raised cap")
	bkSameAs(t, big, reader, "grow")
}

// TestSyncRefusesDamagedCopy: a session sync brings to the other side is
// checked there before it is published, as a full backup's copy is: a
// copy damaged on its way is removed, the sync fails naming it, and a
// rerun copies it.
func TestSyncRefusesDamagedCopy(t *testing.T) {
	ctx := context.Background()
	src := openTestStoreWith(t, Options{BlobThreshold: 1024})
	bkGrow(t, src, "lg", 4, 0)
	bkGrow(t, src, "bl", 6, 1)
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	isBlob := func(name string) bool {
		rest, ok := strings.CutPrefix(name, layout.TmpDirPrefix+"bl-")
		if !ok {
			return false
		}
		_, rest, ok = strings.Cut(rest, "/")
		return ok && strings.HasPrefix(rest, BlobDir+"/")
	}
	dfs := &damageFS{FS: vfs.OS(root), match: isBlob, damage: flipAt(100)}
	dst := newStore(dir, root, dfs, fsLeaser{}, Options{})
	defer dst.Close()
	var rep maintenance.SyncReport
	_, _, err = src.offline().Sync(ctx, dst.offline(), maintenance.SyncOptions{}, &rep)
	require.True(t, dfs.hit.Load(), "nothing was damaged")
	require.ErrorIs(t, err, sessionstore.ErrCorrupt)
	require.Contains(t, err.Error(), "bl")
	_, err = os.Lstat(filepath.Join(dir, "bl"))
	require.True(t, errors.Is(err, fs.ErrNotExist), "the damaged copy was published: %v", err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), layout.TmpDirPrefix), "left behind: %s", e.Name())
	}

	rep2, err := src.Sync(ctx, dir, maintenance.SyncOptions{})
	require.NoError(t, err)
	require.True(t, rep2.OK(), "%+v", rep2)
	check, err := Open(dir, Options{})
	require.NoError(t, err)
	defer check.Close()
	for _, id := range []session.SessionID{"lg", "bl"} {
		bkSameAs(t, src, check, id)
	}
}

// TestBackupChecksPages: a full backup of a conversation kept in pages
// checks, as it copies the blobs, each page the records reference (read
// back from the copy, against its claim) and the references the pages'
// messages hold: a sound session is published and verifies; one whose
// page is damaged in the source is published as it is, with the damage
// reported; one whose page lands damaged in the copy is refused.
func TestBackupChecksPages(t *testing.T) {
	ctx := context.Background()
	src := openUncheckedStoreWith(t, Options{MaxRecordBytes: pagedCap}) // the test damages it
	r := rand.New(rand.NewPCG(5, 5))
	writePaged(t, src, "ok", 60, r)
	writePaged(t, src, "bad", 60, r)
	require.Positive(t, requireLinesWithin(t, src, "ok", pagedCap), "full records with pages")

	// A page landing damaged in the copy: refused.
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	dfs := &damageFS{FS: vfs.OS(root), damage: flipAt(50), match: func(name string) bool {
		return strings.Contains(name, "/"+BlobDir+"/") && strings.HasPrefix(name, layout.TmpDirPrefix+"ok-")
	}}
	dst := newStore(dir, root, dfs, fsLeaser{}, Options{})
	defer dst.Close()
	var rep maintenance.BackupReport
	_, err = src.offline().Backup(ctx, dst.offline(), []session.SessionID{"ok"}, src.forSessions, maintenance.BackupOptions{}, &rep)
	require.NoError(t, err)
	require.True(t, dfs.hit.Load(), "nothing was damaged")
	require.Contains(t, rep.Skipped["ok"], "not published")

	// Sound: published, and it verifies.
	dest := filepath.Join(t.TempDir(), "copy")
	rep, err = src.Backup(ctx, dest, "ok")
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep)
	check, err := Open(dest, Options{})
	require.NoError(t, err)
	defer check.Close()
	bkSameAs(t, src, check, "ok")

	// A page damaged in the source: published as it is, reported.
	names, err := blobfile.Names(src.fs, "bad")
	require.NoError(t, err)
	require.NotEmpty(t, names, "pages")
	for _, name := range names {
		path := filepath.Join(src.Dir(), "bad", BlobDir, name)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		data[len(data)/2] ^= 1
		require.NoError(t, os.WriteFile(path, data, 0o600))
	}
	rep, err = src.Backup(ctx, dest, "bad")
	require.NoError(t, err)
	require.False(t, rep.OK(), "the source's damaged pages are reported: %+v", rep)
	require.NotContains(t, rep.Skipped, "bad", "a faithful copy of a damaged source is published")
	require.Len(t, rep.Verify.Sessions, 1)
	require.NotEmpty(t, rep.Verify.Sessions[0].Problems)
	require.Contains(t, rep.Verify.Sessions[0].Problems[0].Message, BlobDir)
}
