package layout

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/session"
)

// The record cap is the store's, not the reader's: a process opened with
// a smaller Options.MaxRecordBytes than the writer's must still read every
// record the writer wrote, and never call one corrupt (nor let repair cut
// it) because it is larger than its own cap. So every writer records its
// cap in the session's settings.json before its first record there (at
// creation, and at takeover when what is recorded is less), and a reader
// reads with the larger of its own cap and the recorded one:
//
//	{"max_record_bytes":16777216}
//
// A recorded cap above MaxReadRecordBytes is not honoured (a reader never
// allocates more than that for one record). A session without the file
// (written by an earlier version) or with one that cannot be read is read
// with the reader's own cap.

// SettingsFile records what a session's records were written with.
const SettingsFile = "settings.json"

// MaxReadRecordBytes bounds the record cap a reader honours, whatever a
// settings.json says (sessionstore.MaxReadRecordBytes).
const MaxReadRecordBytes = sessionstore.MaxReadRecordBytes

// Settings is settings.json.
type Settings struct {
	MaxRecordBytes int `json:"max_record_bytes"`
}

// RecordedCap returns the cap recorded in dir's settings.json (0 when
// there is none), or an error for one that cannot be read or is invalid.
func RecordedCap(fsys vfs.FS, dir string) (int, error) {
	f, err := fsys.OpenFile(dir+"/"+SettingsFile, RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, SettingsMax))
	if err != nil {
		return 0, err
	}
	return ParseCap(data)
}

// SettingsMax is how much of a settings.json is read: a longer one does
// not parse.
const SettingsMax = 4 << 10

// ParseCap returns the cap that data, the first SettingsMax bytes of a
// settings.json, records (RecordedCap's rules).
func ParseCap(data []byte) (int, error) {
	var st Settings
	if err := json.Unmarshal(data, &st); err != nil {
		return 0, fmt.Errorf("%s: %w", SettingsFile, err)
	}
	if st.MaxRecordBytes <= 0 {
		return 0, fmt.Errorf("%s: max_record_bytes %d is not positive", SettingsFile, st.MaxRecordBytes)
	}
	return st.MaxRecordBytes, nil
}

// ReadCap is the record cap a reader with cap own reads session id with
// (record.SessionCap; a settings.json that cannot be read records
// nothing).
func ReadCap(fsys vfs.FS, id session.SessionID, own int) int {
	rec, _ := RecordedCap(fsys, SessionDir(id)) // 0 with its error
	return record.SessionCap(own, int64(rec))
}

// RecordCap makes sure session directory dir records a cap of at least
// the store's own before the store writes a record there: it writes
// settings.json (temporary file, fsync, rename, directory sync) when what
// is recorded is less, or nothing is. synced says whether dir must be
// synced here (false for a session being created, whose directory is
// synced before it is published).
func (r *Root) RecordCap(dir string, synced bool) error {
	return r.RecordCapAtLeast(dir, r.MaxRecordBytes, synced)
}

// RecordCapAtLeast is RecordCap for a cap of at least want (a backup
// appending records another store wrote under its cap).
func (r *Root) RecordCapAtLeast(dir string, want int, synced bool) error {
	if rec, err := RecordedCap(r.FS, dir); err == nil && rec >= want {
		return nil
	}
	data, _ := json.Marshal(Settings{MaxRecordBytes: want}) // an int: cannot fail
	return r.WriteSettings(dir, data, synced)
}

// RecordNewCap records maxRecord in the temporary directory of a session
// being created, which holds no settings.json: the file is created there and
// fsynced (its entry made durable by the sync of the directory before
// publish), not written to a temporary name and renamed, since nobody
// reads the directory before it is published and a crash before leaves
// only a temporary directory, which is never published.
func (r *Root) RecordNewCap(dir string, maxRecord int) error {
	data, _ := json.Marshal(Settings{MaxRecordBytes: maxRecord}) // an int: cannot fail
	name := dir + "/" + SettingsFile
	f, err := r.FS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FilePerm)
	if err != nil {
		return PathErr("record the cap", "", name, err)
	}
	err = WriteAll(f, append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return PathErr("record the cap", "", name, err)
	}
	return nil
}

// WriteSettings replaces dir's settings.json with data (temporary file,
// fsync, rename, and with synced a directory sync).
func (r *Root) WriteSettings(dir string, data []byte, synced bool) error {
	rep := vfs.Replace{Dir: dir, Tmp: "." + SettingsFile + "-" + RandomSuffix() + TmpSuffix, Name: SettingsFile, Perm: FilePerm, SyncFile: true, SyncDir: synced}
	if err := rep.Write(r.FS, append(data, '\n')); err != nil {
		return PathErr("record the cap", "", dir+"/"+SettingsFile, err)
	}
	return nil
}
