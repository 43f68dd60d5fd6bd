package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
)

// runPrealloc is the append-at-the-disk's-limit study:
// the store's lines for W1's snapshot sizes written durably three ways —
// growing the file (O_APPEND, what the store does), and overwriting space
// allocated beforehand at explicit offsets (pwrite), either reserved with
// fallocate (unwritten extents) or written with zeros and synced first —
// each followed by fdatasync.
func runPrealloc(ctx context.Context, c *config, r *report) error {
	for _, size := range w1Sizes {
		if err := runPreallocSize(ctx, c, r, size); err != nil {
			return fmt.Errorf("%d KiB: %w", size>>10, err)
		}
	}
	return nil
}

func runPreallocSize(ctx context.Context, c *config, r *report, size int) error {
	dir := filepath.Join(c.dir, fmt.Sprintf("prealloc-%dKiB", size>>10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	line, err := storeLine(ctx, dir, size)
	if err != nil {
		return err
	}
	n := c.preallocOps[size]
	space := int64(n) * int64(len(line))

	grow, err := newRaw(filepath.Join(dir, "append.log"))
	if err != nil {
		return err
	}
	defer grow.close()
	pre, err := newOverwrite(filepath.Join(dir, "prewritten.log"), space, false)
	if err != nil {
		return err
	}
	defer pre.close()
	names := []string{"O_APPEND growth + fdatasync (the store)", "pwrite into pre-written space + fdatasync"}
	ops := []func() error{
		func() error { return grow.append(line) },
		func() error { return pre.write(line) },
	}
	if canFallocate {
		fa, err := newOverwrite(filepath.Join(dir, "fallocated.log"), space, true)
		if err != nil {
			return err
		}
		defer fa.close()
		names = append(names, "pwrite into fallocated space + fdatasync")
		ops = append(ops, func() error { return fa.write(line) })
	}
	s, err := interleave(ops, n, int64(len(line)))
	if err != nil {
		return err
	}
	t := rateTable(fmt.Sprintf("Append at the disk's limit, %s records", fmtBytes(int64(len(line)))), names, s, names[0], "")
	t.note("records are the store's lines for a %d KiB snapshot; × raw is relative to O_APPEND growth; pre-written space was filled with zeros and synced before the run, fallocated space was reserved without writing (unwritten extents)", size>>10)
	r.add(t)
	r.set(fmt.Sprintf("prealloc/%dKiB/prewritten÷append", size>>10), s[1].opsPerSec()/s[0].opsPerSec())
	return nil
}

// storeLine returns the line jsonlstore writes for an append of a
// snapshot of about size bytes: a full record (FullRecordsOnly), since the
// same snapshot appended again would otherwise be a delta of a few bytes.
func storeLine(ctx context.Context, dir string, size int) ([]byte, error) {
	snap, err := snapshotOfSize("line", size, 0)
	if err != nil {
		return nil, err
	}
	js, err := newJSONL(ctx, filepath.Join(dir, "jsonl"), snap, jsonlstore.Options{FullRecordsOnly: true, Search: fts.New()})
	if err != nil {
		return nil, err
	}
	defer js.close()
	if _, err := js.tail(); err != nil { // revision 1, written by Create
		return nil, err
	}
	if err := js.append(ctx, snap); err != nil {
		return nil, err
	}
	return js.tail()
}

// overwrite writes records at explicit offsets into space allocated
// beforehand: the file's size never changes, so fdatasync has no
// metadata to flush (for pre-written space) or only the conversion of
// unwritten extents (for fallocated space).
type overwrite struct {
	f   *os.File
	off int64
}

func newOverwrite(path string, space int64, useFallocate bool) (*overwrite, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if useFallocate {
		err = fallocate(f, space)
	} else {
		zero := make([]byte, 1<<20)
		for off := int64(0); off < space && err == nil; off += int64(len(zero)) {
			_, err = f.Write(zero[:min(int64(len(zero)), space-off)])
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &overwrite{f: f}, nil
}

func (o *overwrite) write(line []byte) error {
	if _, err := o.f.WriteAt(line, o.off); err != nil {
		return err
	}
	o.off += int64(len(line))
	return datasync(o.f)
}

func (o *overwrite) close() error { return o.f.Close() }
