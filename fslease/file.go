package fslease

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"

	"github.com/sessionstore/sessionstore/internal/owner"
)

// tempPrefix starts the name of the temporary file lease.json is written to
// before it is renamed into place. Leftovers (from a holder killed in the
// middle of a write) are swept by the next Acquire.
const tempPrefix = RecordFile + ".tmp-"

// openNoFollow opens path with O_NOFOLLOW (and O_NONBLOCK) added to flag.
// A symlink at path yields ErrSymlink.
func openNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollowFlags, 0o600) //nolint:gosec // G304: the caller's lease directory is the point; O_NOFOLLOW refuses a symlink
	if err != nil {
		return nil, classifyOpenErr(path, err)
	}
	return f, nil
}

// classifyOpenErr turns the error of an O_NOFOLLOW open into ErrSymlink or
// ErrNotRegular when the path is one; errno for a symlink differs between
// systems (ELOOP on Linux and macOS, EMLINK on FreeBSD), so ask lstat.
func classifyOpenErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil {
		if err := notRegular(fi, path); err != nil {
			return err
		}
	}
	return err
}

// statRegular returns f's FileInfo, or ErrNotRegular unless f, opened from
// path, is a regular file.
func statRegular(f *os.File, path string) (fs.FileInfo, error) {
	fi, err := f.Stat()
	return regular(fi, err, "stat", path)
}

// regular is the answer of a stat (op) of path: fi, or op's error, or
// ErrNotRegular unless fi is a regular file's.
func regular(fi fs.FileInfo, err error, op, path string) (fs.FileInfo, error) {
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, path, err)
	}
	if err := notRegular(fi, path); err != nil {
		return nil, err
	}
	return fi, nil
}

// notRegular is nil for fi of a regular file, ErrSymlink for a symbolic
// link's, and ErrNotRegular, saying what path is, for any other.
func notRegular(fi fs.FileInfo, path string) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s", ErrSymlink, path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, fi.Mode().Type())
	}
	return nil
}

// writeRecordFile replaces dir/lease.json with rec atomically: write a
// temporary file in dir (0600, O_EXCL), fsync it, rename it over lease.json
// and, when durable is set, fsync dir. The temporary file is removed on
// failure.
//
// The file is always synced before the rename, because a rename may reach
// the disk before the data it names and leave an empty lease.json, which
// would lose the generation floor. Syncing the directory is what makes the
// rename itself durable; heartbeats skip it, since losing a heartbeat in a
// crash leaves the previous record of the same generation.
//
// rename replaces a symlink planted as lease.json instead of writing
// through it.
func writeRecordFile(dir string, rec Record, durable bool) (err error) {
	data, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, tempPrefix+randomHex(8))
	f, err := openNoFollow(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = inheritOwner(f, dir); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	dst := filepath.Join(dir, RecordFile)
	if err = os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("rename %s: %w", dst, err)
	}
	if durable {
		// tmp is gone now: on failure the deferred removal is a no-op.
		return syncDir(dir)
	}
	return nil
}

// writeRecordInPlace writes rec over dir/lease.json itself, creating it
// (0600) if need be; neither the file nor dir is synced. It is for a
// directory nobody else can see yet (Options.DirSynced): the file need
// not be replaced atomically there, nor be durable before its creator
// syncs it (Lease.SyncRecord) and the directory and publishes them, since
// a crash before leaves only a directory that is never published, and no
// reader but the holder reads the record of a lease held. Writing in
// place spares the temporary file's inode, its rename and the inode freed
// when it replaces the previous record.
func writeRecordInPlace(dir string, rec Record) (err error) {
	data, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, RecordFile)
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if _, err = statRegular(f, path); err != nil {
		return err
	}
	if err = inheritOwner(f, dir); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncRecordFile fsyncs dir/lease.json.
func syncRecordFile(dir string) (err error) {
	path := filepath.Join(dir, RecordFile)
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// inheritOwner gives f, just created in dir, to dir's owner when this
// process runs as root (see package owner): a root process taking a lease
// in another user's session must not leave files that user cannot read.
func inheritOwner(f *os.File, dir string) error {
	if !owner.Active() {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	return owner.Inherit(f, fi)
}

// inheritLockOwner does what inheritOwner does for the lock file at path,
// which the flock handle fl opened (with O_CREATE) and holds: it opens the
// file again, without following a link, and gives it away only if that is
// the file fl holds.
func inheritLockOwner(path string, fl *flock.Flock) error {
	if !owner.Active() {
		return nil
	}
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	held, err := fl.Stat()
	if err != nil {
		return fmt.Errorf("stat lock descriptor %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, held) {
		return nil // replaced meanwhile: Check reports that to the holder
	}
	return inheritOwner(f, filepath.Dir(path))
}

// syncDir fsyncs a directory so that a rename or creation in it is durable.
// (On macOS os.File.Sync uses F_FULLFSYNC.)
func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // G304: the caller's lease directory, opened to fsync it
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// sweepTemps removes temporary lease.json files left in dir by holders that
// died in the middle of a write, and returns their names. It must be called
// with the lock held: only the holder writes temporary files.
func sweepTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	var swept []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return swept, fmt.Errorf("remove leftover %s: %w", e.Name(), err)
		}
		swept = append(swept, e.Name())
	}
	return swept, nil
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
