package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
)

// BenchmarkAddMessage measures issue 29's first target: adding one
// message through the server over the unix socket, against its baseline
// measured beside it in the same loop (alternating, so that a busy
// machine slows both alike): the same append in process (Writer, on a
// store of its own in the same directory) plus one HTTP round trip to a
// handler that does nothing, over a unix socket too. It reports the p50
// of each and their ratio (the target: server-p50/baseline-p50 ≤ 1.5).
func BenchmarkAddMessage(b *testing.B) {
	ctx := context.Background()
	ts := startServer(b, Options{})
	id, h := ts.create()

	st := openStore(b, filepath.Join(ts.dir, "st2"))
	w, err := Create(ctx, st, CreateOptions{}, sessionstore.AcquireOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, w.Release(ctx)) })

	// The round trip's server: a handler that reads the body and answers.
	nop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	})
	rttSocket := filepath.Join(ts.dir, "rtt.sock")
	l, err := ListenUnix(ctx, rttSocket)
	require.NoError(b, err)
	rtt := &http.Server{Handler: nop, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rtt.Serve(l) }()
	b.Cleanup(func() { _ = rtt.Shutdown(ctx) })
	rttClient := unixClient(rttSocket)
	b.Cleanup(rttClient.CloseIdleConnections)

	url := "http://sessions/v1/sessions/" + id + "/items"
	var server, base []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog", i)
		body := []byte(fmt.Sprintf(`{"handle":%q,"items":[{"role":"user","content":%q}]}`, h, text))

		start := time.Now()
		resp, err := ts.c.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		server = append(server, time.Since(start))

		start = time.Now()
		if _, err := w.AddMessages(ctx, 0, []session.Message{session.TextMessage(session.RoleUser, text, time.Time{})}); err != nil {
			b.Fatal(err)
		}
		resp, err = rttClient.Post("http://rtt/", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		base = append(base, time.Since(start))
	}
	b.StopTimer()
	ps, pb := p50(server), p50(base)
	b.ReportMetric(float64(ps.Nanoseconds()), "server-p50-ns")
	b.ReportMetric(float64(pb.Nanoseconds()), "baseline-p50-ns")
	b.ReportMetric(float64(ps)/float64(pb), "ratio")
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkEightWriters measures issue 29's second target: 8 clients
// appending to 8 sessions through one server, against 8 Go writers in
// process on a store of their own in the same directory, alternating
// rounds in one loop. Each round, every writer appends one message at
// once; the throughput of each is 8 messages over the round's time, and
// ratio is the server's over the in-process writers' (the target: ≥ 0.8).
func BenchmarkEightWriters(b *testing.B) {
	const n = 8
	ctx := context.Background()
	ts := startServer(b, Options{})
	st := openStore(b, filepath.Join(ts.dir, "st2"))
	ids, handles := make([]string, n), make([]string, n)
	clients := make([]*http.Client, n)
	writers := make([]*Writer, n)
	for i := range n {
		ids[i], handles[i] = ts.create()
		clients[i] = unixClient(ts.socket)
		b.Cleanup(clients[i].CloseIdleConnections)
		w, err := Create(ctx, st, CreateOptions{}, sessionstore.AcquireOptions{})
		require.NoError(b, err)
		writers[i] = w
		b.Cleanup(func() { require.NoError(b, w.Release(ctx)) })
	}
	round := func(fn func(i int) error) time.Duration {
		start := time.Now()
		errs := make(chan error, n)
		for i := range n {
			go func() { errs <- fn(i) }()
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	post := func(i int, path, body string) error {
		resp, err := clients[i].Post("http://sessions/v1/sessions/"+ids[i]+path, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	// Messages through the server (the target: appending), items through
	// it (the Agents SDK's path: each item also stored as its JSON), and
	// the same messages in process, interleaved.
	var server, items, inproc time.Duration
	for k := 0; b.Loop(); k++ {
		text := fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog", k)
		server += round(func(i int) error {
			return post(i, "/messages", fmt.Sprintf(`{"handle":%q,"messages":[{"role":"user","parts":[{"type":"text","text":%q}]}]}`, handles[i], text))
		})
		items += round(func(i int) error {
			return post(i, "/items", fmt.Sprintf(`{"handle":%q,"items":[{"role":"user","content":%q}]}`, handles[i], text))
		})
		inproc += round(func(i int) error {
			_, err := writers[i].AddMessages(ctx, 0, []session.Message{session.TextMessage(session.RoleUser, text, time.Time{})})
			return err
		})
	}
	msgs := float64(n * b.N)
	b.ReportMetric(msgs/server.Seconds(), "server-msgs/s")
	b.ReportMetric(msgs/items.Seconds(), "server-items/s")
	b.ReportMetric(msgs/inproc.Seconds(), "inproc-msgs/s")
	b.ReportMetric(inproc.Seconds()/server.Seconds(), "ratio")
	b.ReportMetric(inproc.Seconds()/items.Seconds(), "items-ratio")
}
