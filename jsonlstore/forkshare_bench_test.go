package jsonlstore

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
)

// BenchmarkForkShared forks a session holding SESSIONSTORE_FORK_BYTES of
// blobs (64 MiB unless set; in 1 MiB images) and, in the same run, makes
// `cp -al` of its directory, the floor of a fork that links its files.
// It reports the fork's time over cp -al's (fork/cp-al) and the disk
// blocks the fork adds beyond the parent's, as a percentage of the blob
// bytes (added-%).
func BenchmarkForkShared(b *testing.B) {
	ctx := context.Background()
	total := int64(64 << 20)
	if v := os.Getenv("SESSIONSTORE_FORK_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	dir := b.TempDir()
	st, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := sessiontest.New("parent")
	w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	img := make([]byte, 1<<20)
	for i := range int(total >> 20) {
		for j := 0; j < len(img); j += 8 {
			v := r.Uint64()
			for k := range 8 {
				img[j+k] = byte(v >> (8 * k))
			}
		}
		m := session.TextMessage(session.RoleUser, fmt.Sprintf("image %d", i), sessiontest.Epoch)
		m.Parts = append(m.Parts, session.Part{Type: session.PartImage, MediaType: "image/png", Data: img})
		if err := s.AppendMessage(m); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Append(ctx, uint64(i+1), sessiontest.Snap(b, s)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Release(ctx); err != nil {
		b.Fatal(err)
	}
	cpDir := b.TempDir()
	var forkTime, cpTime time.Duration
	var added int64
	n := 0
	for b.Loop() {
		id := session.SessionID(fmt.Sprintf("fork-%d", n))
		start := time.Now()
		fw, err := st.Fork(ctx, "parent", 0, id, sessionstore.AcquireOptions{})
		if err == nil {
			err = fw.Release(ctx)
		}
		forkTime += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		added += ownBlocks(b, filepath.Join(dir, string(id)))

		start = time.Now()
		if out, err := exec.Command("cp", "-al", filepath.Join(dir, "parent"), filepath.Join(cpDir, strconv.Itoa(n))).CombinedOutput(); err != nil {
			b.Fatalf("cp -al: %v: %s", err, out)
		}
		cpTime += time.Since(start)
		n++
	}
	b.ReportMetric(float64(forkTime)/float64(cpTime), "fork/cp-al")
	b.ReportMetric(float64(cpTime.Microseconds())/float64(n), "cp-al-µs/op")
	b.ReportMetric(100*float64(added)/float64(n)/float64(total), "added-%")
}

// ownBlocks is the disk space, in bytes of allocated blocks, of the files
// and directories under dir that have no other name (a link count of 1):
// what dir adds to the disk beyond the files it shares.
func ownBlocks(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if d.IsDir() || st.Nlink == 1 {
			n += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
