package jsonlstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// BenchmarkVerify checks a session the way `sessions verify` does, beside
// the floor of one pass over what it checks: reading its files once,
// parsing every log line as JSON and hashing every blob. The session
// grows as an agent's does, one revision per message (prompts, replies,
// tool results of 2 to 64 KiB), to about 24 MiB of message text over
// 1,000 or more revisions; with blobs=off its content stays in the log
// (a log of about that size), with blobs=on long content is out of line.
// verify÷parse is the ratio the one-pass rule bounds (≤ 5).
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	for _, v := range []struct {
		name      string
		threshold int
	}{{"blobs=off", -1}, {"blobs=on", 0}} {
		b.Run(v.name, func(b *testing.B) {
			st, err := Open(b.TempDir(), Options{BlobThreshold: v.threshold})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			full := growingAgentSession(b, "verify", 24<<20)
			msgs := full.Conversation()
			s := sessiontest.New("verify")
			w, err := st.Create(ctx, sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range msgs {
				if err := s.AppendMessage(m); err != nil {
					b.Fatal(err)
				}
				snap, err := sessnap.Of(s)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Append(ctx, w.Revision(), snap); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Release(ctx); err != nil {
				b.Fatal(err)
			}
			var verifyNs, parseNs int64
			for b.Loop() {
				t0 := cpuTime()
				rep, err := st.Verify(ctx, "verify")
				if err != nil || !rep.OK() {
					b.Fatal(err, rep)
				}
				t1 := cpuTime()
				if err := parseSessionFiles(st, "verify"); err != nil {
					b.Fatal(err)
				}
				verifyNs += int64(t1 - t0)
				parseNs += int64(cpuTime() - t1)
			}
			fi, err := os.Stat(st.Dir() + "/verify/" + LogFile)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/(1<<20), "log-MiB")
			b.ReportMetric(float64(len(msgs)+1), "revisions")
			b.ReportMetric(float64(verifyNs)/float64(b.N)/1e6, "verify-cpu-ms/op")
			b.ReportMetric(float64(parseNs)/float64(b.N)/1e6, "parse-cpu-ms/op")
			b.ReportMetric(float64(verifyNs)/float64(parseNs), "verify÷parse")
		})
	}
}

// parseSessionFiles is the floor of checking session id: its log read
// once, every line parsed as JSON, every blob read and hashed.
func parseSessionFiles(st *Store, id string) error {
	f, err := os.Open(st.Dir() + "/" + id + "/" + LogFile)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			return os.ErrInvalid
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	names, err := blobfile.Names(st.fs, session.SessionID(id))
	if err != nil {
		return err
	}
	for _, n := range names {
		b, _, err := blobfile.ReadIn(st.fs, blobfile.Dir(session.SessionID(id))+"/", strings.TrimSuffix(n, blobfile.ZstSuffix), blobfile.SizeAny, blobfile.HintNone)
		if err != nil {
			return err
		}
		if sum := sha256.Sum256(b); !bytes.HasPrefix([]byte(n), []byte(hex.EncodeToString(sum[:]))) {
			return os.ErrInvalid
		}
	}
	return nil
}
