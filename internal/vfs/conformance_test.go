package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// impl is an FS under test plus a way to plant a symlink in it.
type impl struct {
	name    string
	new     func(t *testing.T) FS
	symlink func(t *testing.T, fsys FS, oldname, newname string)
}

var impls = []impl{
	{
		name: "OS",
		new: func(t *testing.T) FS {
			root, err := os.OpenRoot(t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { root.Close() })
			return &osTestFS{FS: OS(root), dir: root.Name()}
		},
		symlink: func(t *testing.T, fsys FS, oldname, newname string) {
			require.NoError(t, os.Symlink(oldname, filepath.Join(fsys.(*osTestFS).dir, newname)))
		},
	},
	{
		name: "Sim",
		new:  func(*testing.T) FS { return NewSim() },
		symlink: func(t *testing.T, fsys FS, oldname, newname string) {
			require.NoError(t, fsys.(*Sim).Symlink(oldname, newname))
		},
	},
	{
		// A Faulty without rules must be transparent.
		name: "Faulty(Sim)",
		new:  func(*testing.T) FS { return NewFaulty(NewSim()) },
		symlink: func(t *testing.T, fsys FS, oldname, newname string) {
			require.NoError(t, fsys.(*Faulty).inner.(*Sim).Symlink(oldname, newname))
		},
	},
}

type osTestFS struct {
	FS
	dir string
}

// kind names an error by what callers test it for.
func kind(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrSymlink):
		return "symlink"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, fs.ErrClosed):
		return "closed"
	case errors.As(err, &errno):
		switch errno {
		case syscall.ENOENT:
			return "ENOENT"
		case syscall.EEXIST:
			return "EEXIST"
		case syscall.ENOTDIR:
			return "ENOTDIR"
		case syscall.EISDIR:
			return "EISDIR"
		case syscall.ENOTEMPTY:
			return "ENOTEMPTY"
		case syscall.EINVAL:
			return "EINVAL"
		case syscall.EBADF:
			return "EBADF"
		case syscall.EBUSY:
			return "EBUSY"
		}
		return "errno:" + errno.Error()
	}
	return "other"
}

// rec builds a transcript of observations; two FSs behave alike when their
// transcripts are equal.
type rec struct{ lines []string }

func (r *rec) add(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *rec) open(fsys FS, name string, flag int, perm fs.FileMode) File {
	f, err := fsys.OpenFile(name, flag, perm)
	r.add("open %s: %s", name, kind(err))
	return f
}

func (r *rec) write(f File, s string) {
	n, err := f.Write([]byte(s))
	r.add("write %q: %d %s", s, n, kind(err))
}

func (r *rec) read(f File, size int) {
	b := make([]byte, size)
	n, err := f.Read(b)
	r.add("read %d: %q %s", size, b[:n], kind(err))
}

func (r *rec) readAt(f File, size int, off int64) {
	b := make([]byte, size)
	n, err := f.ReadAt(b, off)
	r.add("readat %d@%d: %q %s", size, off, b[:n], kind(err))
}

func (r *rec) content(fsys FS, name string) {
	b, err := ReadFile(fsys, name, 1<<20)
	r.add("content %s: %q %s", name, b, kind(err))
}

func (r *rec) stat(fsys FS, name string) {
	fi, err := fsys.Lstat(name)
	if err != nil {
		r.add("lstat %s: %s", name, kind(err))
		return
	}
	size := fi.Size()
	if fi.IsDir() {
		size = -1 // directory sizes differ between file systems
	}
	r.add("lstat %s: name=%s mode=%v size=%d", name, fi.Name(), fi.Mode(), size)
}

func (r *rec) dir(fsys FS, name string) {
	des, err := fsys.ReadDir(name)
	var names []string
	for _, de := range des {
		fi, ierr := de.Info()
		if ierr != nil {
			names = append(names, de.Name()+"(info error)")
			continue
		}
		names = append(names, fmt.Sprintf("%s:%v:%v", de.Name(), de.IsDir(), de.Type()|fi.Mode().Perm()))
	}
	r.add("readdir %s: [%s] %s", name, strings.Join(names, " "), kind(err))
}

func (r *rec) do(label string, err error) { r.add("%s: %s", label, kind(err)) }

const (
	wrExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	rd     = os.O_RDONLY
)

// behaviour is a scenario run against every impl; all must produce want.
type behaviour struct {
	name string
	run  func(t *testing.T, fsys FS, r *rec, symlink func(oldname, newname string))
	want []string
}

var behaviours = []behaviour{
	{
		name: "open flags and file descriptor rules",
		run: func(t *testing.T, fsys FS, r *rec, _ func(string, string)) {
			r.open(fsys, "a", rd, 0)
			f := r.open(fsys, "a", wrExcl, 0o600)
			r.write(f, "hello")
			r.read(f, 3) // write-only descriptor
			r.readAt(f, 3, 0)
			r.do("close", f.Close())
			r.do("close again", f.Close())
			r.write(f, "x")
			r.open(fsys, "a", wrExcl, 0o600)
			r.stat(fsys, "a")

			f = r.open(fsys, "a", rd, 0)
			r.write(f, "x") // read-only descriptor
			r.do("truncate read-only", f.Truncate(1))
			r.read(f, 3)
			r.read(f, 10)
			r.read(f, 10)
			r.read(f, 0)
			r.readAt(f, 10, 2)
			r.readAt(f, 10, 99)
			r.readAt(f, 2, 1)
			_, err := f.ReadAt(make([]byte, 1), -1)
			r.do("readat negative", err)
			fi, err := f.Stat()
			require.NoError(t, err)
			r.add("stat: %s %d %v", fi.Name(), fi.Size(), fi.Mode())
			r.add("name: %s", f.Name())
			r.do("sync read-only", f.Sync())
			r.do("close", f.Close())

			f = r.open(fsys, "a", os.O_RDWR|os.O_APPEND, 0)
			r.write(f, "ab")
			r.write(f, "cd")
			r.read(f, 4) // the offset is at the end
			r.readAt(f, 20, 0)
			r.do("close", f.Close())

			f = r.open(fsys, "a", os.O_RDWR, 0)
			r.write(f, "XY") // overwrites at offset 0
			r.read(f, 3)     // continues at offset 2
			r.do("truncate extend", f.Truncate(12))
			r.readAt(f, 20, 0)
			r.do("truncate shrink", f.Truncate(4))
			r.do("truncate negative", f.Truncate(-1))
			r.write(f, "!") // offset 5 > size 4: a NUL fills the gap
			r.do("close", f.Close())
			r.content(fsys, "a")

			f = r.open(fsys, "a", os.O_WRONLY|os.O_TRUNC, 0)
			r.do("close", f.Close())
			r.stat(fsys, "a")
			f = r.open(fsys, "a", os.O_WRONLY|os.O_CREATE, 0o644) // exists: perm ignored
			r.do("close", f.Close())
			r.stat(fsys, "a")
			r.do("sync closed", f.Sync())
		},
		want: []string{
			"open a: ENOENT",
			"open a: ok",
			`write "hello": 5 ok`,
			`read 3: "" EBADF`,
			`readat 3@0: "" EBADF`,
			"close: ok",
			"close again: closed",
			`write "x": 0 closed`,
			"open a: EEXIST",
			"lstat a: name=a mode=-rw------- size=5",
			"open a: ok",
			`write "x": 0 EBADF`,
			"truncate read-only: EINVAL",
			`read 3: "hel" ok`,
			`read 10: "lo" ok`,
			`read 10: "" EOF`,
			`read 0: "" ok`,
			`readat 10@2: "llo" EOF`,
			`readat 10@99: "" EOF`,
			`readat 2@1: "el" ok`,
			"readat negative: other",
			"stat: a 5 -rw-------",
			"name: a",
			"sync read-only: ok",
			"close: ok",
			"open a: ok",
			`write "ab": 2 ok`,
			`write "cd": 2 ok`,
			`read 4: "" EOF`,
			`readat 20@0: "helloabcd" EOF`,
			"close: ok",
			"open a: ok",
			`write "XY": 2 ok`,
			`read 3: "llo" ok`,
			"truncate extend: ok",
			`readat 20@0: "XYlloabcd\x00\x00\x00" EOF`,
			"truncate shrink: ok",
			"truncate negative: EINVAL",
			`write "!": 1 ok`,
			"close: ok",
			`content a: "XYll\x00!" ok`,
			"open a: ok",
			"close: ok",
			"lstat a: name=a mode=-rw------- size=0",
			"open a: ok",
			"close: ok",
			"lstat a: name=a mode=-rw------- size=0",
			"sync closed: closed",
		},
	},
	{
		name: "paths and directories",
		run: func(t *testing.T, fsys FS, r *rec, _ func(string, string)) {
			r.do("mkdir d", fsys.Mkdir("d", 0o700))
			r.stat(fsys, "d")
			r.stat(fsys, "d/")
			fi, err := fsys.Lstat(".")
			require.NoError(t, err)
			r.add("lstat .: %s %v", fi.Name(), fi.IsDir()) // the mode of t.TempDir depends on the umask
			r.do("mkdir d again", fsys.Mkdir("d", 0o700))
			r.do("mkdir x/y", fsys.Mkdir("x/y", 0o700))
			for _, n := range []string{"d/b", "d/a", "d/c"} {
				f := r.open(fsys, n, wrExcl, 0o600)
				r.write(f, n)
				r.do("close", f.Close())
			}
			r.do("mkdir d/e", fsys.Mkdir("d/e", 0o755))
			r.dir(fsys, "d")
			r.dir(fsys, ".")
			r.dir(fsys, "d/a")
			r.dir(fsys, "nope")
			r.stat(fsys, "d/a/")
			r.stat(fsys, "d/../d/a")
			r.stat(fsys, "d/nope")
			r.stat(fsys, "../x")
			r.stat(fsys, "/etc")
			r.open(fsys, "d/a/x", os.O_WRONLY|os.O_CREATE, 0o600)
			r.open(fsys, "nope/x", os.O_WRONLY|os.O_CREATE, 0o600)
			r.do("mkdir under file", fsys.Mkdir("d/a/x", 0o700))
			r.open(fsys, "d", os.O_RDWR, 0)
			r.open(fsys, "d", os.O_RDONLY|os.O_CREATE, 0o600)
			r.open(fsys, "d", os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600)
			r.open(fsys, "d/a", os.O_RDONLY|syscall.O_DIRECTORY, 0)
			f := r.open(fsys, "d", rd, 0)
			r.read(f, 4)
			r.do("sync directory handle", f.Sync())
			r.do("close", f.Close())
			r.do("syncdir .", fsys.SyncDir("."))
			r.do("syncdir empty", fsys.SyncDir(""))
			r.do("syncdir d/e", fsys.SyncDir("d/e"))
			r.do("syncdir nope", fsys.SyncDir("nope"))
			r.do("remove non-empty", fsys.Remove("d"))
			r.do("remove missing", fsys.Remove("d/zz"))
			r.do("remove root", fsys.Remove("."))
			r.do("remove empty dir", fsys.Remove("d/e"))
			r.do("remove file", fsys.Remove("d/c"))
			r.dir(fsys, "d")
			r.do("removeall missing", fsys.RemoveAll("zz/y"))
			r.do("removeall root", fsys.RemoveAll("."))
			r.do("mkdir d/e/f/g", errors.Join(fsys.Mkdir("d/e", 0o700), fsys.Mkdir("d/e/f", 0o700), fsys.Mkdir("d/e/f/g", 0o700)))
			r.do("removeall d", fsys.RemoveAll("d"))
			r.dir(fsys, ".")
		},
		want: []string{
			"mkdir d: ok",
			"lstat d: name=d mode=drwx------ size=-1",
			"lstat d/: name=d mode=drwx------ size=-1",
			"lstat .: . true",
			"mkdir d again: EEXIST",
			"mkdir x/y: ENOENT",
			"open d/b: ok", `write "d/b": 3 ok`, "close: ok",
			"open d/a: ok", `write "d/a": 3 ok`, "close: ok",
			"open d/c: ok", `write "d/c": 3 ok`, "close: ok",
			"mkdir d/e: ok",
			"readdir d: [a:false:-rw------- b:false:-rw------- c:false:-rw------- e:true:drwxr-xr-x] ok",
			"readdir .: [d:true:drwx------] ok",
			"readdir d/a: [] ENOTDIR",
			"readdir nope: [] ENOENT",
			"lstat d/a/: ENOTDIR",
			"lstat d/../d/a: name=a mode=-rw------- size=3",
			"lstat d/nope: ENOENT",
			"lstat ../x: other",
			"lstat /etc: other",
			"open d/a/x: ENOTDIR",
			"open nope/x: ENOENT",
			"mkdir under file: ENOTDIR",
			"open d: EISDIR",
			"open d: EISDIR",
			"open d: EEXIST",
			"open d/a: ENOTDIR",
			"open d: ok",
			`read 4: "" EISDIR`,
			"sync directory handle: ok",
			"close: ok",
			"syncdir .: ok",
			"syncdir empty: ok",
			"syncdir d/e: ok",
			"syncdir nope: ENOENT",
			"remove non-empty: ENOTEMPTY",
			"remove missing: ENOENT",
			"remove root: EINVAL",
			"remove empty dir: ok",
			"remove file: ok",
			"readdir d: [a:false:-rw------- b:false:-rw-------] ok",
			"removeall missing: ok",
			"removeall root: EINVAL",
			"mkdir d/e/f/g: ok",
			"removeall d: ok",
			"readdir .: [] ok",
		},
	},
	{
		name: "rename",
		run: func(t *testing.T, fsys FS, r *rec, _ func(string, string)) {
			for _, n := range []string{"a", "b"} {
				f := r.open(fsys, n, wrExcl, 0o600)
				r.write(f, n+"-data")
				r.do("close", f.Close())
			}
			ida := id(t, fsys, "a")
			r.do("rename a b", fsys.Rename("a", "b"))
			r.add("identity kept: %v", id(t, fsys, "b") == ida)
			r.stat(fsys, "a")
			r.content(fsys, "b")
			r.do("rename missing", fsys.Rename("a", "c"))
			r.do("rename into missing dir", fsys.Rename("b", "nope/b"))
			r.do("rename same", fsys.Rename("b", "b"))
			r.do("mkdirs", errors.Join(fsys.Mkdir("d", 0o700), fsys.Mkdir("e", 0o700), fsys.Mkdir("full", 0o700)))
			f := r.open(fsys, "d/f", wrExcl, 0o600)
			r.write(f, "inside")
			r.do("close", f.Close())
			r.do("create full/x", errors.Join(fsys.Mkdir("full/x", 0o700)))
			r.do("file over dir", fsys.Rename("b", "e"))
			r.do("dir over file", fsys.Rename("d", "b"))
			r.do("dir over empty dir", fsys.Rename("d", "e"))
			r.do("dir over non-empty dir", fsys.Rename("d", "full"))
			r.do("dir into itself", fsys.Rename("d", "d/sub"))
			r.do("root", fsys.Rename(".", "zz"))
			idd := id(t, fsys, "d")
			r.do("dir rename moves contents", fsys.Rename("d", "full/x2"))
			r.content(fsys, "full/x2/f")
			r.add("dir identity kept: %v", id(t, fsys, "full/x2") == idd)
			r.dir(fsys, "full")
			r.do("noreplace to new", fsys.RenameNoReplace("full/x2", "full/x3"))
			r.do("noreplace over empty dir", fsys.RenameNoReplace("full/x3", "full/x"))
			r.do("noreplace over file", fsys.RenameNoReplace("b", "full"))
			r.do("noreplace missing", fsys.RenameNoReplace("zz", "yy"))
			r.add("noreplace across dirs fails: %v", fsys.RenameNoReplace("b", "e/b") != nil)
			r.dir(fsys, "full")
			// A hard link is another name of the same file.
			r.do("link to new", fsys.Link("b", "e/b2"))
			r.content(fsys, "e/b2")
			r.add("link shares identity: %v", id(t, fsys, "e/b2") == id(t, fsys, "b"))
			r.do("link over file", fsys.Link("b", "e/b2"))
			r.do("link missing", fsys.Link("zz", "e/zz"))
			r.do("link a dir", fsys.Link("e", "e2"))
			r.do("link into missing dir", fsys.Link("b", "nope/b"))
			r.do("unlink one name", fsys.Remove("e/b2"))
			r.content(fsys, "b")
			// A new file is a new inode; truncation keeps the inode.
			f = r.open(fsys, "n", wrExcl, 0o600)
			r.do("close", f.Close())
			idn := id(t, fsys, "n")
			r.add("new identity: %v", idn != id(t, fsys, "b"))
			f = r.open(fsys, "n", os.O_WRONLY|os.O_TRUNC, 0)
			r.do("close", f.Close())
			r.add("truncate keeps identity: %v", idn == id(t, fsys, "n"))
		},
		want: []string{
			"open a: ok", `write "a-data": 6 ok`, "close: ok",
			"open b: ok", `write "b-data": 6 ok`, "close: ok",
			"rename a b: ok",
			"identity kept: true",
			"lstat a: ENOENT",
			`content b: "a-data" ok`,
			"rename missing: ENOENT",
			"rename into missing dir: ENOENT",
			"rename same: ok",
			"mkdirs: ok",
			"open d/f: ok", `write "inside": 6 ok`, "close: ok",
			"create full/x: ok",
			"file over dir: EEXIST",
			"dir over file: ENOTDIR",
			"dir over empty dir: EEXIST",
			"dir over non-empty dir: EEXIST",
			"dir into itself: EINVAL",
			"root: EBUSY",
			"dir rename moves contents: ok",
			`content full/x2/f: "inside" ok`,
			"dir identity kept: true",
			"readdir full: [x:true:drwx------ x2:true:drwx------] ok",
			"noreplace to new: ok",
			"noreplace over empty dir: EEXIST",
			"noreplace over file: EEXIST",
			"noreplace missing: ENOENT",
			"noreplace across dirs fails: true",
			"readdir full: [x:true:drwx------ x3:true:drwx------] ok",
			"link to new: ok",
			`content e/b2: "a-data" ok`,
			"link shares identity: true",
			"link over file: EEXIST",
			"link missing: ENOENT",
			"link a dir: other",
			"link into missing dir: ENOENT",
			"unlink one name: ok",
			`content b: "a-data" ok`,
			"open n: ok", "close: ok",
			"new identity: true",
			"open n: ok", "close: ok",
			"truncate keeps identity: true",
		},
	},
	{
		name: "symlinks are refused",
		run: func(t *testing.T, fsys FS, r *rec, symlink func(string, string)) {
			require.NoError(t, fsys.Mkdir("d", 0o700))
			f := r.open(fsys, "d/f", wrExcl, 0o600)
			r.do("close", f.Close())
			symlink("d/f", "l")
			symlink("d", "ld")
			symlink("nowhere", "dangling")
			r.open(fsys, "l", rd, 0)
			r.open(fsys, "l", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			r.open(fsys, "l", wrExcl, 0o600)
			r.open(fsys, "dangling", os.O_WRONLY|os.O_CREATE, 0o600)
			r.open(fsys, "ld/f", rd, 0)
			r.open(fsys, "ld/new", wrExcl, 0o600)
			r.dir(fsys, "ld")
			r.do("syncdir ld", fsys.SyncDir("ld"))
			r.do("mkdir ld/x", fsys.Mkdir("ld/x", 0o700))
			r.do("mkdir l", fsys.Mkdir("l", 0o700))
			fi, err := fsys.Lstat("l")
			require.NoError(t, err)
			r.add("lstat l is symlink: %v", fi.Mode()&fs.ModeSymlink != 0)
			r.dir(fsys, ".")
			r.do("noreplace over symlink", fsys.RenameNoReplace("d", "dangling"))
			r.do("remove l", fsys.Remove("l"))
			r.do("removeall ld", fsys.RemoveAll("ld"))
			r.dir(fsys, "d")
		},
		want: []string{
			"open d/f: ok", "close: ok",
			"open l: symlink",
			"open l: symlink",
			"open l: symlink",
			"open dangling: symlink",
			"open ld/f: symlink",
			"open ld/new: symlink",
			"readdir ld: [] symlink",
			"syncdir ld: symlink",
			"mkdir ld/x: symlink",
			"mkdir l: EEXIST",
			"lstat l is symlink: true",
			"readdir .: [d:true:drwx------ dangling:false:Lrwxrwxrwx l:false:Lrwxrwxrwx ld:false:Lrwxrwxrwx] ok",
			"noreplace over symlink: EEXIST",
			"remove l: ok",
			"removeall ld: ok",
			"readdir d: [f:false:-rw-------] ok",
		},
	},
}

// TestBehaviourMatchesOS runs each scenario against the real file system,
// the Sim and a rule-less Faulty: without a crash the Sim must behave like
// the OS (flags, errors, rename rules, ReadDir order, symlink refusal).
func TestBehaviourMatchesOS(t *testing.T) {
	for _, b := range behaviours {
		for _, im := range impls {
			t.Run(b.name+"/"+im.name, func(t *testing.T) {
				fsys := im.new(t)
				r := &rec{}
				b.run(t, fsys, r, func(o, n string) { im.symlink(t, fsys, o, n) })
				require.Equal(t, b.want, r.lines)
			})
		}
	}
}

func id(t *testing.T, fsys FS, name string) Identity {
	t.Helper()
	fi, err := fsys.Lstat(name)
	require.NoError(t, err)
	ident := IdentityOf(fi)
	require.NotZero(t, ident.Ino)
	return ident
}
