package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// config is what the flags chose.
type config struct {
	quick bool
	dir   string
	// Counts, set by -quick or the defaults.
	w1Ops       map[int]int // snapshot size → appends per system
	w2Revs      int
	w3Revs      int
	w3Loads     int
	w4Sessions  int
	w4Fresh     int
	w4Live      int
	w5MiB       int
	w5Rounds    int
	preallocOps map[int]int
}

func fullConfig() config {
	return config{
		w1Ops:  map[int]int{1 << 10: 2000, 16 << 10: 1500, 256 << 10: 400},
		w2Revs: 1000, w3Revs: 10000, w3Loads: 2000,
		w4Sessions: 10000, w4Fresh: 20, w4Live: 2000,
		w5MiB: 256, w5Rounds: 3,
		preallocOps: map[int]int{1 << 10: 2000, 16 << 10: 1500, 256 << 10: 400},
	}
}

func quickConfig() config {
	return config{
		quick:  true,
		w1Ops:  map[int]int{1 << 10: 200, 16 << 10: 200, 256 << 10: 60},
		w2Revs: 150, w3Revs: 1000, w3Loads: 300,
		w4Sessions: 1000, w4Fresh: 5, w4Live: 300,
		w5MiB: 24, w5Rounds: 1,
		preallocOps: map[int]int{1 << 10: 200, 16 << 10: 200, 256 << 10: 60},
	}
}

// workload is one named part of the run.
type workload struct {
	name string
	run  func(ctx context.Context, c *config, r *report) error
}

var workloads = []workload{
	{"W1", runW1},
	{"prealloc", runPrealloc},
	{"W2", runW2},
	{"W3", runW3},
	{"W4", runW4},
	{"W5", runW5},
}

func main() {
	quick := flag.Bool("quick", false, "small counts, so that the whole run takes under two minutes")
	only := flag.String("only", "", "comma-separated workloads to run (W1, prealloc, W2, W3, W4, W5); all when empty")
	dir := flag.String("dir", "", "working directory (default: a new directory under $TMPDIR); it must be on the file system to measure")
	out := flag.String("out", "", "also write the tables to this file")
	child := flag.String("child", "", "internal: run as a child process in this mode")
	flag.Parse()

	if *child != "" {
		if err := runChild(*child, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "sessbench child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*quick, *only, *dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sessbench:", err)
		os.Exit(1)
	}
}

func run(quick bool, only, dir, out string) error {
	c := fullConfig()
	if quick {
		c = quickConfig()
	}
	var chosen []workload
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(workloads, func(w workload) bool { return strings.EqualFold(w.name, name) })
		if i < 0 {
			return fmt.Errorf("-only: unknown workload %q", name)
		}
		chosen = append(chosen, workloads[i])
	}
	if len(chosen) == 0 {
		chosen = workloads
	}

	if dir == "" {
		d, err := os.MkdirTemp("", "sessbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		d, err := os.MkdirTemp(dir, "sessbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	c.dir = dir

	r := &report{}
	var buf bytes.Buffer
	w := io.MultiWriter(os.Stdout, &buf)
	mode := "full"
	if quick {
		mode = "quick (-quick: small counts, figures are rough)"
	}
	fmt.Fprintf(w, "## sessbench results\n\n")
	fmt.Fprintf(w, "- run: %s, %s, started %s\n", mode, strings.Join(names(chosen), ", "), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "- machine: %s/%s, %d CPUs (%s), kernel %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), kernel(), runtime.Version())
	fmt.Fprintf(w, "- working directory: %s, file system %s\n", dir, fsType(dir))
	fmt.Fprintf(w, "- written: bytes this process passed to write(2)/pwrite(2) during the operations (/proc/self/io wchar; the file system's journal not included); dirtied: page cache dirtied (write_bytes; with large folios a small write into a big file counts a whole folio, so an upper bound); on disk: apparent file sizes\n\n")

	ctx := context.Background()
	start := time.Now()
	for _, wl := range chosen {
		fmt.Fprintf(os.Stderr, "sessbench: %s … (%s so far)\n", wl.name, time.Since(start).Round(time.Second))
		n := len(r.tables)
		if err := wl.run(ctx, &c, r); err != nil {
			return fmt.Errorf("%s: %w", wl.name, err)
		}
		for _, t := range r.tables[n:] {
			t.markdown(w)
		}
	}
	if ts := r.targets(); len(ts) > 0 {
		targetTable(ts).markdown(w)
	}
	fmt.Fprintf(w, "Total time: %s.\n", time.Since(start).Round(time.Second))
	if out != "" {
		return os.WriteFile(out, buf.Bytes(), 0o644)
	}
	return nil
}

func names(ws []workload) []string {
	var n []string
	for _, w := range ws {
		n = append(n, w.name)
	}
	return n
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown model"
	}
	for l := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown model"
}
