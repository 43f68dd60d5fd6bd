package ingest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/importer/claudecode"
)

// file is one file of a source, as found.
type file struct {
	path string // absolute
	size int64
}

// source is one conversation's files: its main file and, for Claude
// Code, the files of its sub-agents.
type source struct {
	dir   string // the main file's directory (the converter's fs.FS root)
	name  string // the main file's name in dir
	files []file // the main file first
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

// discover finds the sources of tool under paths, in batches.
func discover(tool string, paths []string) ([]*batch, error) {
	if tool == ClaudeCode {
		return discoverClaude(paths)
	}
	return discoverCodex(paths)
}

// discoverClaude finds Claude Code transcripts: a path is a transcript, a
// project directory (transcripts in it) or a projects directory (project
// directories in it); both of the latter are looked for in a directory.
// Sub-agents' files (agent-*.jsonl) are their sessions' files, not
// sources.
func discoverClaude(paths []string) ([]*batch, error) {
	projects := map[string][]string{} // project directory → transcript names
	var order []string
	add := func(dir, name string) {
		if _, ok := projects[dir]; !ok {
			order = append(order, dir)
		}
		if !slices.Contains(projects[dir], name) {
			projects[dir] = append(projects[dir], name)
		}
	}
	for _, p := range paths {
		abs, fi, err := statPath(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			add(filepath.Dir(abs), filepath.Base(abs))
			continue
		}
		names, err := transcriptsIn(abs)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			add(abs, n)
		}
		sub, err := claudecode.Discover(os.DirFS(abs))
		if err != nil {
			return nil, fmt.Errorf("ingest: %s: %w", abs, err)
		}
		for _, n := range sub {
			d, name := filepath.Split(filepath.FromSlash(n))
			add(filepath.Join(abs, d), name)
		}
	}
	var batches []*batch
	for _, dir := range order {
		names := projects[dir]
		slices.Sort(names)
		byFirst := map[string]*batch{}
		for _, n := range names {
			src, first, err := claudeSource(dir, n)
			if err != nil {
				return nil, err
			}
			if b := byFirst[first]; b != nil && first != "" {
				b.sources = append(b.sources, src)
				continue
			}
			b := &batch{sources: []*source{src}}
			byFirst[first] = b
			batches = append(batches, b)
		}
	}
	return batches, nil
}

// transcriptsIn lists the session transcripts directly in dir.
func transcriptsIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".jsonl") && !strings.HasPrefix(n, "agent-") && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	return out, nil
}

// claudeSource is the transcript name of dir with its sub-agents' files,
// and the uuid of its first message (claudecode.Peek).
func claudeSource(dir, name string) (*source, string, error) {
	fsys := os.DirFS(dir)
	id, first, err := claudecode.Peek(fsys, name)
	if err != nil {
		return nil, "", fmt.Errorf("ingest: %w", err)
	}
	agents, err := claudecode.SubagentFiles(fsys, name, id)
	if err != nil {
		return nil, "", fmt.Errorf("ingest: %w", err)
	}
	src := &source{dir: dir, name: name}
	for _, n := range append([]string{name}, agents...) {
		p := filepath.Join(dir, filepath.FromSlash(n))
		fi, err := os.Stat(p)
		if err != nil {
			return nil, "", fmt.Errorf("ingest: %w", err)
		}
		src.files = append(src.files, file{path: p, size: fi.Size()})
	}
	return src, first, nil
}

// discoverCodex finds Codex rollouts: a path is a rollout, or a directory
// searched to any depth for *.jsonl files (the sessions directory's
// YYYY/MM/DD layout, an archive of rollouts, a copy of a few).
func discoverCodex(paths []string) ([]*batch, error) {
	var batches []*batch
	seen := map[string]bool{}
	add := func(p string, size int64) {
		if !seen[p] {
			seen[p] = true
			src := &source{dir: filepath.Dir(p), name: filepath.Base(p), files: []file{{path: p, size: size}}}
			batches = append(batches, &batch{sources: []*source{src}})
		}
	}
	for _, p := range paths {
		abs, fi, err := statPath(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			add(abs, fi.Size())
			continue
		}
		var found []file
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl") {
				info, err := d.Info()
				if err != nil {
					return err
				}
				found = append(found, file{path: p, size: info.Size()})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		// Lexical order is time order in Codex's layout: a parent's
		// rollout comes before its sub-agents'.
		slices.SortFunc(found, func(a, b file) int { return strings.Compare(a.path, b.path) })
		for _, f := range found {
			add(f.path, f.size)
		}
	}
	return batches, nil
}

// statPath returns p's absolute path and what it is (symlinks followed).
func statPath(p string) (string, fs.FileInfo, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", nil, fmt.Errorf("ingest: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", nil, fmt.Errorf("ingest: %w", err)
	}
	return abs, fi, nil
}
