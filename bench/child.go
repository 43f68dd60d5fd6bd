package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/pgstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// Child modes: the bench binary runs itself (-child MODE ARGS…) for what
// must happen in a fresh process — a listing with nothing cached but the
// kernel's page cache, a compaction whose peak memory is its own. A child
// prints one line, "result key=value …"; ns is the time of the operation
// measured inside the child, hwm its peak resident set size (VmHWM).
//
// The peak is read by the child from /proc/self/status, not from the
// parent's rusage: Go starts children with clone(CLONE_VM|CLONE_VFORK), and
// Linux carries the high-water mark of the memory the child shared until
// exec — the parent's — into the child's ru_maxrss, so every child would
// report at least the parent's peak.

// result prints a child's result line, its peak RSS added.
func result(format string, args ...any) {
	fmt.Printf("result "+format+" hwm=%d\n", append(args, peakRSS())...)
}

// peakRSS returns this process's peak resident set size (VmHWM) in bytes,
// or -1 where /proc does not say.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return -1
}

func runChild(mode string, args []string) error {
	ctx := context.Background()
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch mode {
	case "search-jsonl", "search-floor": // DIR WORD
		return w7Child(mode, arg(0), arg(1))
	case "sl-fts5", "sl-bleve": // PATH WORD
		return slChild(mode, arg(0), arg(1))
	case "w8-cpu": // ROUNDS
		return w8CPUChild(arg(0))
	case "w8-writer": // DIR ID SEED
		return w8WriterChild(arg(0), arg(1), arg(2))
	case "w9-resume": // DIR ID N
		return w9Child(arg(0), arg(1), arg(2))
	case "w9-load": // DIR ID
		return w9LoadChild(arg(0), arg(1))
	case "w9-decode": // SESSIONDIR
		return w9DecodeChild(arg(0))
	case "w9-read", "w9-read-zstd": // SESSIONDIR
		return w9ReadChild(arg(0), mode == "w9-read-zstd")
	case "noop":
		result("ns=0")
		return nil
	case "list-jsonl": // DIR
		start := time.Now()
		st, err := jsonlstore.Open(arg(0), jsonlstore.Options{Search: fts.New()})
		if err != nil {
			return err
		}
		page, err := st.List(ctx, summary.Query{})
		d := time.Since(start)
		st.Close()
		if err != nil {
			return err
		}
		result("ns=%d items=%d first=%s", d.Nanoseconds(), len(page.Items), firstID(page))
		return nil
	case "list-pg": // DSN
		start := time.Now()
		st, err := pgstore.Open(ctx, arg(0), pgstore.Options{})
		if err != nil {
			return err
		}
		page, err := st.List(ctx, summary.Query{})
		d := time.Since(start)
		st.Close()
		if err != nil {
			return err
		}
		result("ns=%d items=%d first=%s", d.Nanoseconds(), len(page.Items), firstID(page))
		return nil
	case "scan-floor": // DIR
		// The floor of a listing that reads every summary: list the root,
		// read each summary.json, stat each log, with plain system calls
		// (no os.Root, no checks, no decoding, one goroutine).
		start := time.Now()
		entries, err := os.ReadDir(arg(0))
		if err != nil {
			return err
		}
		n := 0
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if _, err := os.ReadFile(filepath.Join(arg(0), e.Name(), jsonlstore.SummaryFile)); err != nil {
				return err
			}
			if _, err := os.Lstat(filepath.Join(arg(0), e.Name(), jsonlstore.LogFile)); err != nil {
				return err
			}
			n++
		}
		result("ns=%d sessions=%d", time.Since(start).Nanoseconds(), n)
		return nil
	case "list-sqlite": // DB
		start := time.Now()
		db, err := openSQLite(arg(0))
		if err != nil {
			return err
		}
		defer db.Close()
		items, err := sqliteFirstPage(db)
		d := time.Since(start)
		if err != nil {
			return err
		}
		first := session.SessionID("")
		if len(items) > 0 {
			first = items[0].ID
		}
		result("ns=%d items=%d first=%s", d.Nanoseconds(), len(items), first)
		return nil
	case "compact": // DIR ID
		st, err := jsonlstore.Open(arg(0), jsonlstore.Options{Search: fts.New()})
		if err != nil {
			return err
		}
		defer st.Close()
		start := time.Now()
		rep, err := st.Compact(ctx, session.SessionID(arg(1)), maintenance.CompactPolicy{KeepLast: 1}, 0)
		d := time.Since(start)
		if err != nil {
			return err
		}
		if rep.Skipped != "" {
			return fmt.Errorf("compaction skipped: %s", rep.Skipped)
		}
		result("ns=%d trimmed=%d before=%d archive=%d", d.Nanoseconds(), rep.RevisionsTrimmed, rep.LogBytesBefore, rep.ArchiveBytes)
		return nil
	case "compact-raw": // FILE
		// The floor of a compaction: read the log once and compress it as
		// an archive segment is compressed (jsonlstore's encoder settings:
		// one goroutine, 8 MiB window, fastest level, CRC), into nothing.
		start := time.Now()
		f, err := os.Open(arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		zw, err := zstd.NewWriter(io.Discard, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(8<<20),
			zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
		if err != nil {
			return err
		}
		n, err := io.Copy(zw, f)
		if err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		result("ns=%d bytes=%d", time.Since(start).Nanoseconds(), n)
		return nil
	}
	return fmt.Errorf("unknown child mode %q", mode)
}

func firstID(p summary.Page) session.SessionID {
	if len(p.Items) == 0 {
		return ""
	}
	return p.Items[0].ID
}

// childResult is what a child reported and what the parent saw of it.
type childResult struct {
	fields map[string]string
	wall   time.Duration // from start to exit, as the parent saw it
	maxRSS int64         // peak resident set size, bytes (-1: unknown)
	stderr string        // what the child printed on stderr
}

func (r childResult) ns() time.Duration {
	n, _ := strconv.ParseInt(r.fields["ns"], 10, 64)
	return time.Duration(n)
}

// spawn runs this binary as a child in mode with args.
func spawn(mode string, args ...string) (childResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return childResult{}, err
	}
	cmd := exec.Command(exe, append([]string{"-child", mode}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return childResult{}, fmt.Errorf("child %s: %w: %s", mode, err, strings.TrimSpace(errb.String()))
	}
	res := childResult{fields: map[string]string{}, wall: wall, maxRSS: -1, stderr: errb.String()}
	for line := range strings.Lines(out.String()) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "result "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				res.fields[k] = v
			}
			if n, err := strconv.ParseInt(res.fields["hwm"], 10, 64); err == nil {
				res.maxRSS = n
			}
			return res, nil
		}
	}
	return childResult{}, fmt.Errorf("child %s printed no result: %q", mode, out.String())
}

// copyFile copies src to a new file dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
