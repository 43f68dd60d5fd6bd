package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// sample is what one system did in one measurement: the latency of each
// operation, the logical bytes each handled (the encoded snapshot, the
// same for every system), and what the operations wrote, from
// /proc/self/io:
//
//   - written (wchar): the bytes passed to write(2) and pwrite(2) — every
//     file the system writes (log, summary, WAL, checkpoints, pages, meta)
//     counted exactly, but not the file system's own journal and metadata
//     blocks;
//   - dirtied (write_bytes): page cache the writes dirtied, counted when a
//     page or folio goes from clean to dirty. With large folios (ext4 on
//     Linux 6.16 and later) one small pwrite into a file written in large
//     chunks can count a whole folio (1 MiB measured), so this is an upper
//     bound, not the bytes sent to the disk.
type sample struct {
	lat     []time.Duration
	logical int64
	written int64
	dirtied int64
	// ioKnown is false where /proc/self/io cannot be read.
	ioKnown bool
}

func (s *sample) add(d time.Duration, logical int64) {
	s.lat = append(s.lat, d)
	s.logical += logical
}

func (s *sample) total() time.Duration {
	var t time.Duration
	for _, d := range s.lat {
		t += d
	}
	return t
}

// opsPerSec is the throughput over the time spent in the operations
// themselves (setup and the other systems' turns excluded).
func (s *sample) opsPerSec() float64 {
	t := s.total()
	if t <= 0 {
		return 0
	}
	return float64(len(s.lat)) / t.Seconds()
}

func (s *sample) mbPerSec() float64 {
	t := s.total()
	if t <= 0 {
		return 0
	}
	return float64(s.logical) / t.Seconds() / 1e6
}

// pct returns the p-th percentile latency (nearest rank).
func (s *sample) pct(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	l := slices.Clone(s.lat)
	slices.Sort(l)
	i := int(p/100*float64(len(l))+0.5) - 1
	return l[max(0, min(i, len(l)-1))]
}

// ioMeter reads this process's wchar and write_bytes from /proc/self/io.
type ioMeter struct{ buf []byte }

// read returns the process's wchar and write_bytes so far, ok false when
// the kernel does not say.
func (m *ioMeter) read() (wchar, writeBytes int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	if m.buf == nil {
		m.buf = make([]byte, 512)
	}
	n, _ := f.Read(m.buf)
	found := 0
	for line := range bytes.Lines(m.buf[:n]) {
		k, v, _ := bytes.Cut(line, []byte(":"))
		x, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		switch {
		case err != nil:
		case string(k) == "wchar":
			wchar = x
			found++
		case string(k) == "write_bytes":
			writeBytes = x
			found++
		}
	}
	return wchar, writeBytes, found == 2
}

// timed runs op once, timing it, and charges s with its latency, logical
// bytes and disk writes.
func (m *ioMeter) timed(s *sample, logical int64, op func() error) error {
	c0, d0, ok0 := m.read()
	t0 := time.Now()
	err := op()
	d := time.Since(t0)
	c1, d1, ok1 := m.read()
	if err != nil {
		return err
	}
	s.add(d, logical)
	if ok0 && ok1 {
		s.written += c1 - c0
		s.dirtied += d1 - d0
		s.ioKnown = true
	}
	return nil
}

// dirSize returns the apparent size (bytes, as ls -l shows) of the files
// under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// rotate returns the order of n systems for round r: each round starts
// one further, so no system always runs right after another's sync.
func rotate(n, r int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = (i + r) % n
	}
	return o
}

func fmtBytes(n int64) string {
	switch {
	case n < 0:
		return "—"
	case n >= 10<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 10<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f µs", float64(d)/1e3)
}

// fmtNum formats a rate with about three significant digits.
func fmtNum(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtRatio(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

// fmtX formats a large ratio: one decimal below 10, none above.
func fmtX(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.0f×", v)
}
