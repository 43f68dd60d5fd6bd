package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/importer/claudecode"
)

// file is one file of a source, as found.
type file struct {
	path string // absolute
	name string // in the source's fsys
	size int64
}

// source is one conversation's files: its main file and, for Claude
// Code, the files of its sub-agents.
type source struct {
	fsys fs.FS  // the main file's directory, in the tree it was found in (the converter's fs.FS)
	dir  string // that directory's absolute path
	name string // the main file's name in dir
	// files are the main file first, then its sub-agents'.
	files []file
	// err is why the source could not be planned (its first lines or its
	// sub-agents' files could not be read): it is reported failed.
	err error
	// unchanged: every file is as the store's sessions record it.
	unchanged bool
}

func (s *source) path() string { return s.files[0].path }

func (s *source) bytes() int64 {
	var n int64
	for _, f := range s.files {
		n += f.size
	}
	return n
}

func (s *source) paths() []string {
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.path
	}
	return out
}

// batch is sources read together: Claude Code sessions of one project
// whose first message is the same (a session resumed in a new file starts
// with copies of its messages, and folds into its continuation only among
// sources read together), or one source.
type batch struct {
	sources []*source
}

// Ignored is a path that finding the sources passed over without reading
// it, and why: a directory that cannot be read, a file that is not a
// regular file (a named pipe, a device), a symbolic link (a walk follows
// none), a directory deeper than Options.MaxDepth.
type Ignored struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// discovery is the state of finding the sources under the paths given:
// the trees opened (one per path), the batches found and the paths
// passed over.
type discovery struct {
	ctx     context.Context
	opts    Options
	trees   []*importer.Tree
	batches []*batch
	ignored []Ignored
	entries int // directory entries seen, bounded by opts.MaxEntries
}

// close closes the trees: every file read from them is closed already.
func (d *discovery) close() {
	for _, t := range d.trees {
		_ = t.Close() // a directory opened for reading
	}
}

// discover finds the sources of tool under paths, in batches. Each path
// is opened as a tree (importer.Tree): the sources under it are read
// through it, so nothing under a path leads out of it.
func discover(ctx context.Context, tool string, paths []string, opts Options) (*discovery, error) {
	d := &discovery{ctx: ctx, opts: opts}
	var err error
	if tool == ClaudeCode {
		err = d.claude(paths)
	} else {
		err = d.codex(paths)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// open opens the path p as a tree: p itself when it is a directory, its
// directory when it is a regular file (name is then its name). Links in
// p are followed: the caller named it. Anything else is refused.
func (d *discovery) open(p string) (abs string, fsys fs.FS, name string, err error) {
	abs, err = filepath.Abs(p)
	if err != nil {
		return "", nil, "", fmt.Errorf("ingest: %w", err)
	}
	fi, err := os.Stat(abs) // never opens: a named pipe cannot block it
	if err != nil {
		return "", nil, "", fmt.Errorf("ingest: %w", err)
	}
	dir := abs
	switch {
	case fi.IsDir():
	case fi.Mode().IsRegular():
		dir, name = filepath.Dir(abs), filepath.Base(abs)
	default:
		return "", nil, "", fmt.Errorf("ingest: %s: %w", abs, importer.NotRegularError(fi.Mode()))
	}
	t, err := importer.OpenTree(dir)
	if err != nil {
		return "", nil, "", fmt.Errorf("ingest: %w", err)
	}
	d.trees = append(d.trees, t)
	return abs, t.FS(d.ctx), name, nil
}

// readDir lists the directory rel of fsys (under the tree at abs) and
// counts its entries against MaxEntries.
func (d *discovery) readDir(fsys fs.FS, abs, rel string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(fsys, rel)
	d.entries += len(entries)
	if d.entries > d.opts.MaxEntries {
		return nil, fmt.Errorf("%w: more than %d under %s; name the directory that holds the sessions", ErrTooManyEntries, d.opts.MaxEntries, abs)
	}
	return entries, err
}

func (d *discovery) ignore(p, reason string) {
	d.ignored = append(d.ignored, Ignored{Path: p, Reason: reason})
}

// passOver records an entry of a walk that is not read: a link, or a
// file named as a source that is not a regular file.
func (d *discovery) passOver(p string, e fs.DirEntry) {
	switch {
	case e.Type()&fs.ModeSymlink != 0:
		d.ignore(p, "a symbolic link: links are not followed")
	case !e.IsDir() && !e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl"):
		d.ignore(p, importer.NotRegularError(e.Type()).Error())
	}
}

// unreadable records a directory of a walk that cannot be listed.
func (d *discovery) unreadable(p string, err error) {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	d.ignore(p, "unreadable directory: "+err.Error())
}

// claude finds Claude Code transcripts: a path is a transcript, a
// project directory (transcripts in it) or a projects directory (project
// directories in it); both of the latter are looked for in a directory.
// Only regular files are sources; links are not followed. Sub-agents'
// files (agent-*.jsonl) are their sessions' files, not sources.
func (d *discovery) claude(paths []string) error {
	type project struct {
		fsys  fs.FS
		names []string
	}
	projects := map[string]*project{} // project directory → its transcripts
	var order []string
	add := func(dir string, fsys fs.FS, name string) {
		p := projects[dir]
		if p == nil {
			p = &project{fsys: fsys}
			projects[dir] = p
			order = append(order, dir)
		}
		if !slices.Contains(p.names, name) {
			p.names = append(p.names, name)
		}
	}
	for _, p := range paths {
		abs, fsys, name, err := d.open(p)
		if err != nil {
			return err
		}
		if name != "" {
			add(filepath.Dir(abs), fsys, name)
			continue
		}
		entries, err := d.readDir(fsys, abs, ".")
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		for _, e := range entries {
			if err := d.ctx.Err(); err != nil {
				return err
			}
			n := e.Name()
			switch {
			case e.Type().IsRegular():
				if claudecode.IsTranscript(n) {
					add(abs, fsys, n)
				}
			case e.IsDir():
				sub, err := d.readDir(fsys, abs, n)
				if err != nil {
					if errors.Is(err, ErrTooManyEntries) {
						return err
					}
					d.unreadable(filepath.Join(abs, n), err)
					continue
				}
				pfs, err := fs.Sub(fsys, n)
				if err != nil {
					return fmt.Errorf("ingest: %w", err)
				}
				for _, f := range sub {
					switch {
					case f.Type().IsRegular() && claudecode.IsTranscript(f.Name()):
						add(filepath.Join(abs, n), pfs, f.Name())
					case !f.IsDir():
						d.passOver(filepath.Join(abs, n, f.Name()), f)
					}
				}
			default:
				d.passOver(filepath.Join(abs, n), e)
			}
		}
	}
	for _, dir := range order {
		p := projects[dir]
		slices.Sort(p.names)
		byFirst := map[string]*batch{}
		for _, n := range p.names {
			if err := d.ctx.Err(); err != nil {
				return err
			}
			src, first := claudeSource(p.fsys, dir, n)
			if b := byFirst[first]; b != nil && first != "" {
				b.sources = append(b.sources, src)
				continue
			}
			b := &batch{sources: []*source{src}}
			byFirst[first] = b
			d.batches = append(d.batches, b)
		}
	}
	return nil
}

// claudeSource is the transcript name of the project directory fsys (at
// dir) with its sub-agents' files, and the uuid of its first message
// (claudecode.Peek). A transcript whose first lines or sub-agents cannot
// be read is a source that failed, with the error.
func claudeSource(fsys fs.FS, dir, name string) (*source, string) {
	src := &source{fsys: fsys, dir: dir, name: name}
	fail := func(err error) (*source, string) {
		src.err = err
		src.files = []file{{path: filepath.Join(dir, name), name: name}}
		return src, ""
	}
	id, first, err := claudecode.Peek(fsys, name)
	if err != nil {
		return fail(err)
	}
	agents, err := claudecode.SubagentFiles(fsys, name, id)
	if err != nil {
		return fail(err)
	}
	for _, n := range append([]string{name}, agents...) {
		fi, err := fs.Stat(fsys, n)
		if err != nil {
			return fail(err)
		}
		src.files = append(src.files, file{path: filepath.Join(dir, filepath.FromSlash(n)), name: n, size: fi.Size()})
	}
	return src, first
}

// codex finds Codex rollouts: a path is a rollout, or a directory
// searched for *.jsonl files (the sessions directory's YYYY/MM/DD layout,
// an archive of rollouts, a copy of a few) down to MaxDepth directories
// below it. Only regular files are sources; links are not followed; a
// directory that cannot be read is recorded, and the walk goes on.
func (d *discovery) codex(paths []string) error {
	seen := map[string]bool{}
	add := func(fsys fs.FS, abs, rel string, size int64) error {
		p := filepath.Join(abs, filepath.FromSlash(rel))
		if seen[p] {
			return nil
		}
		seen[p] = true
		dir, name := path.Split(rel)
		sub := fsys
		if dir != "" {
			var err error
			if sub, err = fs.Sub(fsys, path.Clean(dir)); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
		}
		src := &source{fsys: sub, dir: filepath.Dir(p), name: name, files: []file{{path: p, name: name, size: size}}}
		d.batches = append(d.batches, &batch{sources: []*source{src}})
		return nil
	}
	for _, p := range paths {
		abs, fsys, name, err := d.open(p)
		if err != nil {
			return err
		}
		if name != "" {
			fi, err := fs.Stat(fsys, name)
			if err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
			if err := add(fsys, filepath.Dir(abs), name, fi.Size()); err != nil {
				return err
			}
			continue
		}
		var found []file
		err = fs.WalkDir(fsys, ".", func(rel string, e fs.DirEntry, err error) error {
			if err := d.ctx.Err(); err != nil {
				return err
			}
			full := filepath.Join(abs, filepath.FromSlash(rel))
			if err != nil {
				if rel == "." {
					return err // the directory named
				}
				d.unreadable(full, err)
				return nil // its siblings are walked
			}
			if rel != "." {
				if d.entries++; d.entries > d.opts.MaxEntries {
					return fmt.Errorf("%w: more than %d under %s; name the directory that holds the sessions", ErrTooManyEntries, d.opts.MaxEntries, abs)
				}
			}
			switch {
			case e.IsDir():
				if rel != "." && strings.Count(rel, "/")+1 > d.opts.MaxDepth {
					d.ignore(full, fmt.Sprintf("more than %d directories deep: not searched", d.opts.MaxDepth))
					return fs.SkipDir
				}
			case e.Type().IsRegular():
				if strings.HasSuffix(e.Name(), ".jsonl") {
					info, err := e.Info()
					if err != nil {
						return err
					}
					found = append(found, file{path: rel, size: info.Size()})
				}
			default:
				d.passOver(full, e)
			}
			return nil
		})
		if err != nil {
			if errors.Is(err, ErrTooManyEntries) || d.ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("ingest: %w", err)
		}
		// Lexical order is time order in Codex's layout: a parent's
		// rollout comes before its sub-agents'.
		slices.SortFunc(found, func(a, b file) int { return strings.Compare(a.path, b.path) })
		for _, f := range found {
			if err := add(fsys, abs, f.path, f.size); err != nil {
				return err
			}
		}
	}
	return nil
}
