package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// config is what the flags chose.
type config struct {
	quick bool
	dir   string
	// out receives notes printed outside the tables (the pgstore server).
	out      io.Writer
	cleanups *cleanups
	pg       pgServer
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
	w6MiB       int
	w6Loads     int
	preallocOps map[int]int
	slSessions  int
	slAppends   int
	slFresh     int
	w7Sessions  int
	w7LargeMiB  int
	w7Fresh     int
	w7Appends   int
	w8Sessions  int
	w8Msgs      int
	w8Phase     time.Duration
	w9MiB       int
	w9Fresh     int
	w9Many      int
}

func fullConfig() config {
	return config{
		w1Ops:  map[int]int{1 << 10: 2000, 16 << 10: 1500, 256 << 10: 400},
		w2Revs: 1000, w3Revs: 10000, w3Loads: 2000,
		w4Sessions: 10000, w4Fresh: 20, w4Live: 2000,
		w5MiB: 256, w5Rounds: 3,
		w6MiB: 256, w6Loads: 5,
		preallocOps: map[int]int{1 << 10: 2000, 16 << 10: 1500, 256 << 10: 400},
		slSessions:  10000, slAppends: 500, slFresh: 15,
		w7Sessions: 10000, w7LargeMiB: 1024, w7Fresh: 15, w7Appends: 480,
		w8Sessions: 300, w8Msgs: 30, w8Phase: 45 * time.Second,
		w9MiB: 64, w9Fresh: 15, w9Many: 10000,
	}
}

func quickConfig() config {
	return config{
		quick:  true,
		w1Ops:  map[int]int{1 << 10: 200, 16 << 10: 200, 256 << 10: 60},
		w2Revs: 150, w3Revs: 1000, w3Loads: 300,
		w4Sessions: 1000, w4Fresh: 5, w4Live: 300,
		w5MiB: 24, w5Rounds: 1,
		w6MiB: 16, w6Loads: 3,
		preallocOps: map[int]int{1 << 10: 200, 16 << 10: 200, 256 << 10: 60},
		slSessions:  1000, slAppends: 100, slFresh: 5,
		w7Sessions: 1000, w7LargeMiB: 32, w7Fresh: 5, w7Appends: 96,
		w8Sessions: 300, w8Msgs: 9, w8Phase: 8 * time.Second,
		w9MiB: 8, w9Fresh: 5, w9Many: 1000,
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
	{"W6", runW6},
	{"SL", runSearchLib},
	{"W7", runW7},
	{"W8", runW8},
	{"W9", runW9},
}

// w9Counts are the -w9-fresh and -w9-many flags (-1: the configuration's).
var w9Counts [2]int

func main() {
	quick := flag.Bool("quick", false, "small counts, so that the whole run takes under two minutes")
	only := flag.String("only", "", "comma-separated workloads to run (W1, prealloc, W2, W3, W4, W5, W6, SL, W7, W8, W9); all when empty")
	dir := flag.String("dir", "", "working directory (default: a new directory under $TMPDIR); it must be on the file system to measure")
	out := flag.String("out", "", "also write the tables to this file")
	pg := flag.Bool("pg", true, "add pgstore rows (W1, W3, W4), on a throwaway PostgreSQL cluster this run starts")
	child := flag.String("child", "", "internal: run as a child process in this mode")
	w9Fresh := flag.Int("w9-fresh", -1, "W9: fresh-process resumes of the large session (0 skips them; default: the configuration's)")
	w9Many := flag.Int("w9-many", -1, "W9: resumes of the small session in one process (0 skips them; default: the configuration's)")
	flag.Parse()
	w9Counts = [2]int{*w9Fresh, *w9Many}

	if *child != "" {
		if err := runChild(*child, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "sessbench child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*quick, *pg, *only, *dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sessbench:", err)
		os.Exit(1)
	}
}

func run(quick, pg bool, only, dir, out string) (err error) {
	c := fullConfig()
	if quick {
		c = quickConfig()
	}
	c.pg.off = !pg
	if w9Counts[0] >= 0 {
		c.w9Fresh = w9Counts[0]
	}
	if w9Counts[1] >= 0 {
		c.w9Many = w9Counts[1]
	}
	// What the run leaves behind (its directory, the PostgreSQL cluster)
	// is removed at the end, on error, and on SIGINT or SIGTERM.
	cl := &cleanups{}
	c.cleanups = cl
	defer func() { err = errors.Join(err, cl.run()) }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "sessbench: %v: cleaning up\n", sig)
		if err := cl.run(); err != nil {
			fmt.Fprintln(os.Stderr, "sessbench:", err)
		}
		os.Exit(130)
	}()
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

	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	dir, err = os.MkdirTemp(dir, "sessbench-")
	if err != nil {
		return err
	}
	cl.add(func() error { return os.RemoveAll(dir) })
	c.dir = dir

	r := &report{}
	var buf bytes.Buffer
	w := io.MultiWriter(os.Stdout, &buf)
	c.out = w
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

// cleanups are run once, last added first, by whichever comes first: the
// end of the run or a signal.
type cleanups struct {
	mu   sync.Mutex
	fns  []func() error
	once sync.Once
	err  error
}

func (c *cleanups) add(fn func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

func (c *cleanups) run() error {
	c.once.Do(func() {
		c.mu.Lock()
		fns := slices.Clone(c.fns)
		c.mu.Unlock()
		for i := len(fns) - 1; i >= 0; i-- {
			c.err = errors.Join(c.err, fns[i]())
		}
	})
	return c.err
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
