package jsonlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// growingAgentSession is a session of about size bytes of message text: a
// user prompt, an assistant reply, a tool result of 2 to 64 KiB, and again.
func growingAgentSession(tb testing.TB, id string, size int) *session.Session {
	tb.Helper()
	r := rand.New(rand.NewPCG(uint64(size), 1))
	s := sessiontest.New(id)
	word := func(n int) string { return strings.Repeat(fmt.Sprintf("w%d ", r.IntN(1000)), n/3+1)[:n] }
	for total := 0; total < size; {
		ms := []session.Message{
			session.TextMessage(session.RoleUser, word(300), sessiontest.Epoch),
			session.TextMessage(session.RoleAssistant, word(500), sessiontest.Epoch),
			{Role: session.RoleTool, CreatedAt: sessiontest.Epoch, Parts: []session.Part{{Type: session.PartToolResult, ToolCallID: "c", Output: word(2<<10 + r.IntN(62<<10))}}},
		}
		for _, m := range ms {
			if err := s.AppendMessage(m); err != nil {
				tb.Fatal(err)
			}
			total += len(m.Parts[0].Text) + len(m.Parts[0].Output)
		}
	}
	return s
}

// BenchmarkAppendGrown is the CPU an append costs in a grown session: a
// session of 1 MiB and of 100 MiB of message text (tool outputs out of
// line, older messages in pages), each op appending one 2 KiB message
// through the README's path (sessnap.Of, then Append). The store's syncs
// are made no-ops (vfs.Fault.Silent), so that wall time is the store's
// own work; cpu-µs/op is the process's CPU time (getrusage) per append.
// The cost must not follow the session: 100 MiB within a few µs of 1 MiB.
func BenchmarkAppendGrown(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{1 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("session=%dMiB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			root, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			faulty := vfs.NewFaulty(vfs.OS(root))
			faulty.Inject(vfs.Fault{Op: vfs.OpAnySync, Times: -1, Silent: true})
			st := newStore(dir, root, faulty, fsLeaser{}, Options{})
			defer st.Close()
			s := growingAgentSession(b, "grown", size)
			w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Release(ctx)
			rev := w.Revision()
			text := strings.Repeat("a two KiB change ", 2<<10/17)
			b.ResetTimer()
			c0 := cpuTime()
			for i := range b.N {
				if err := s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprint(i, text), sessiontest.Epoch)); err != nil {
					b.Fatal(err)
				}
				snap, err := sessnap.Of(s)
				if err != nil {
					b.Fatal(err)
				}
				if rev, err = w.Append(ctx, rev, snap); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - c0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkLoadGrown loads the latest revision of a grown session (64 MiB
// of message text: tool outputs out of line, older messages in pages),
// beside the floor: reading every file of the session directory once,
// decompressing what is compressed (read-unique).
func BenchmarkLoadGrown(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := growingAgentSession(b, "grown", 64<<20)
	w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Release(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("load", func(b *testing.B) {
		for range b.N {
			rec, err := st.Load(ctx, "grown")
			if err != nil {
				b.Fatal(err)
			}
			if len(rec.Snapshot.Messages) != len(s.Conversation()) {
				b.Fatal("messages missing")
			}
		}
	})
	b.Run("read-unique", func(b *testing.B) {
		for range b.N {
			if err := readSessionFiles(st, "grown"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// readSessionFiles reads every file of session id's directory once,
// decompressing the blobs stored compressed.
func readSessionFiles(st *Store, id session.SessionID) error {
	names, err := blobfile.Names(st.fs, id)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, _, err := blobfile.ReadIn(st.fs, blobfile.Dir(id)+"/", strings.TrimSuffix(n, blobfile.ZstSuffix), blobfile.SizeAny, blobfile.HintNone); err != nil {
			return err
		}
	}
	_, err = os.ReadFile(st.Dir() + "/" + string(id) + "/" + LogFile)
	return err
}
