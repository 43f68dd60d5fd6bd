package vfs

import (
	"bytes"
	"math/rand/v2"
	"slices"
)

// The durability model of Sim.
//
// A file's content is durable as of its last Sync or Datasync (the two are
// the same here); every write and truncate since is pending. A directory's
// entries are durable as of its last SyncDir (or Sync of the directory
// opened with OpenFile); every link (create, Mkdir, Symlink), unlink
// (Remove, RemoveAll) and rename touching it since is pending. Syncing a
// file does not make its name durable, and syncing a directory does not
// make its files' content durable, nor its own name in its parent.
//
// A rename is one operation, also between two directories: it survives
// whole or not at all, and syncing either directory commits it together
// with the earlier pending operations on the other one, so a file is never
// left in neither directory.
//
// At a crash (Crash), what survives is:
//
//   - Directories: the durable entries, then a subset of the pending entry
//     operations replayed in order, skipping those that no longer apply (a
//     link whose name is taken, an unlink or rename whose source is not
//     there). The subset is, per crash: none (1/4), all (1/4), or each
//     operation independently with a probability drawn per crash (1/2).
//   - Files, for each file reachable after that: the durable content, then
//     a subset of the pending operations applied in order, where a
//     truncate survives whole and a write is cut at 4 KiB-aligned file
//     offsets into pieces that survive independently (gaps read as NULs).
//     The subset is chosen per file as for directories.
//   - Then, with probability 1/3 for a file with pending operations, its
//     size survives without its data: it is extended with NULs to the
//     pre-crash size (1/2) or to the size after a random pending operation
//     (1/2), if that is larger than what survived.
//
// So a rename may survive while the renamed file's unsynced data does not:
// a file replaced by temp+rename without fsync may come back empty, torn,
// NUL-filled, old or new. Reachability is rebuilt from the root: what is
// not reachable is gone; a directory reachable twice (only possible after
// odd replays) keeps its first name in sorted order. Modes and times are
// not modeled: they survive as they were. Open files do not survive.

// Crash returns a new Sim holding a possible state after a power loss now,
// chosen with r (see the model above). Everything in it is durable; it has
// no OnSync hook and a SyncCount of zero. s is not changed: crash it again
// for another outcome.
func (s *Sim) Crash(r *rand.Rand) *Sim { return s.crash(crashRandom, r) }

// CrashDurableOnly returns the state after a crash in which nothing
// pending survives.
func (s *Sim) CrashDurableOnly() *Sim { return s.crash(crashNone, nil) }

// CrashAll returns the state after a crash in which everything pending
// survives (no NUL extension): the current state, all durable.
func (s *Sim) CrashAll() *Sim { return s.crash(crashAll, nil) }

type crashMode int

const (
	crashRandom crashMode = iota
	crashNone
	crashAll
)

// chooser decides, per group of operations, which survive.
type chooser struct {
	r    *rand.Rand
	mode crashMode
	kind int // per group: 0 none, 1 all, 2 independent with probability p
	p    float64
}

func (c *chooser) group() {
	if c.mode == crashRandom {
		c.kind = c.r.IntN(4)
		if c.kind > 2 {
			c.kind = 2
		}
		c.p = c.r.Float64()
	}
}

func (c *chooser) keep() bool {
	switch {
	case c.mode == crashNone:
		return false
	case c.mode == crashAll:
		return true
	case c.kind == 0:
		return false
	case c.kind == 1:
		return true
	}
	return c.r.Float64() < c.p
}

func (s *Sim) crash(mode crashMode, r *rand.Rand) *Sim {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &chooser{r: r, mode: mode}

	// Directory entries: durable, then the surviving pending operations.
	view := map[*inode]map[string]*inode{}
	get := func(d *inode) map[string]*inode {
		m, ok := view[d]
		if !ok {
			m = cloneEntries(d.durEntries)
			view[d] = m
		}
		return m
	}
	c.group()
	for _, op := range s.meta {
		if c.keep() {
			applyMeta(op, get)
		}
	}

	ns := &Sim{nextIno: s.nextIno, now: s.now}
	seen := map[*inode]*inode{}
	var visit func(d *inode) *inode
	visit = func(d *inode) *inode {
		nd := &inode{ino: d.ino, mode: d.mode, mtime: d.mtime, entries: map[string]*inode{}}
		seen[d] = nd
		m := get(d)
		for _, nm := range sortedNames(m) {
			child := m[nm]
			if x, ok := seen[child]; ok {
				if !child.isDir() {
					nd.entries[nm] = x // a hard link
				}
				continue
			}
			switch {
			case child.isDir():
				nd.entries[nm] = visit(child)
			default:
				x := &inode{ino: child.ino, mode: child.mode, mtime: child.mtime, target: child.target}
				if child.isFile() {
					x.data = crashContent(child, c)
					x.dur, x.shared = x.data, true
				}
				seen[child] = x
				nd.entries[nm] = x
			}
		}
		nd.durEntries = cloneEntries(nd.entries)
		return nd
	}
	ns.root = visit(s.root)
	return ns
}

// crashContent is what survives of file n's content.
func crashContent(n *inode, c *chooser) []byte {
	if c.mode == crashAll {
		return bytes.Clone(n.data)
	}
	if c.mode == crashNone || len(n.pending) == 0 {
		return bytes.Clone(n.dur)
	}
	b := make([]byte, len(n.dur), max(len(n.dur), len(n.data)))
	copy(b, n.dur)
	c.group()
	for _, op := range n.pending {
		if op.trunc {
			if c.keep() {
				b = resize(b, op.off)
			}
			continue
		}
		end := op.off + int64(len(op.data))
		for lo := op.off; lo < end; {
			hi := min((lo/simPage+1)*simPage, end)
			if c.keep() {
				b = writeAt(b, lo, op.data[lo-op.off:hi-op.off])
			}
			lo = hi
		}
	}
	if c.r.IntN(3) == 0 {
		size := int64(len(n.data))
		if c.r.IntN(2) == 0 {
			size = n.pending[c.r.IntN(len(n.pending))].sizeAfter
		}
		if size > int64(len(b)) {
			b = resize(b, size)
		}
	}
	return b
}

// Snapshot returns a deep copy of s, pending operations included, so the
// state at one moment (say, inside an OnSync hook) can be crashed many
// times later. The copy has no hook and a SyncCount of zero; open files
// are not copied.
func (s *Sim) Snapshot() *Sim {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[*inode]*inode{}
	var cp func(n *inode) *inode
	cp = func(n *inode) *inode {
		if n == nil {
			return nil
		}
		if x, ok := m[n]; ok {
			return x
		}
		x := &inode{
			ino: n.ino, mode: n.mode, mtime: n.mtime, target: n.target,
			data: bytes.Clone(n.data), dur: bytes.Clone(n.dur),
			pending: slices.Clone(n.pending), // write data is never modified
		}
		m[n] = x
		if n.isDir() {
			x.entries = make(map[string]*inode, len(n.entries))
			for k, v := range n.entries {
				x.entries[k] = cp(v)
			}
			x.durEntries = make(map[string]*inode, len(n.durEntries))
			for k, v := range n.durEntries {
				x.durEntries[k] = cp(v)
			}
		}
		return x
	}
	ns := &Sim{nextIno: s.nextIno, now: s.now, root: cp(s.root)}
	for _, op := range s.meta {
		o := *op
		o.dir, o.dir2, o.node = cp(op.dir), cp(op.dir2), cp(op.node)
		ns.meta = append(ns.meta, &o)
	}
	return ns
}
