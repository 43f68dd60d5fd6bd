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
// process appending to 8 other sessions of the same store. Each phase lets
// every writer append burst messages one after another, as fast as its
// appends are acknowledged (no writer waits for another), and its
// throughput is all the phase's messages over its time. The phases
// alternate in one loop so that the disk's and the machine's drift falls
// on all of them; ratio is the server's throughput over the in-process
// writers' (the target: ≥ 0.8).
//
// A fourth phase measures the floor that any server on this machine
// stands on: 8 clients posting the same bodies over a unix socket to a
// bare net/http handler that decodes nothing and makes the same in-process
// append (its writers, 8 more sessions of the store), so that the only
// cost it adds to the in-process writers is HTTP's own (floor-ratio).
// On 2 cores, where the clients, the server and the appends share the
// CPU, that cost delays each writer's next fdatasync past the file
// system's group commit; server/floor says how much the server adds to it.
func BenchmarkEightWriters(b *testing.B) {
	const n, burst = 8, 16
	ctx := context.Background()
	ts := startServer(b, Options{})
	ids, handles := make([]string, n), make([]string, n)
	clients := make([]*http.Client, n)
	writers := make([]*Writer, n)
	for i := range n {
		ids[i], handles[i] = ts.create()
		clients[i] = unixClient(ts.socket)
		b.Cleanup(clients[i].CloseIdleConnections)
		w, err := Create(ctx, ts.st, CreateOptions{}, sessionstore.AcquireOptions{})
		require.NoError(b, err)
		writers[i] = w
		b.Cleanup(func() { require.NoError(b, w.Release(ctx)) })
	}
	text := func(k int) string {
		return fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog", k)
	}
	floorWriters := make([]*Writer, n)
	for i := range n {
		w, err := Create(ctx, ts.st, CreateOptions{}, sessionstore.AcquireOptions{})
		require.NoError(b, err)
		floorWriters[i] = w
		b.Cleanup(func() { require.NoError(b, w.Release(ctx)) })
	}
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || len(body) == 0 {
			http.Error(w, "no body", http.StatusBadRequest)
			return
		}
		i := int(r.URL.Path[len(r.URL.Path)-1] - '0')
		rev, err := floorWriters[i].AddMessages(r.Context(), 0, []session.Message{session.TextMessage(session.RoleUser, text(i), time.Time{})})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"revision":%d}`+"\n", rev)
	})
	floorSocket := filepath.Join(ts.dir, "floor.sock")
	l, err := ListenUnix(ctx, floorSocket)
	require.NoError(b, err)
	floorSrv := &http.Server{Handler: floor, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = floorSrv.Serve(l) }()
	b.Cleanup(func() { _ = floorSrv.Shutdown(ctx) })
	floorClients := make([]*http.Client, n)
	for i := range n {
		floorClients[i] = unixClient(floorSocket)
		b.Cleanup(floorClients[i].CloseIdleConnections)
	}
	phase := func(fn func(i, k int) error) time.Duration {
		start := time.Now()
		errs := make(chan error, n)
		for i := range n {
			go func() {
				for k := range burst {
					if err := fn(i, k); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	post := func(c *http.Client, url, body string) error {
		resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
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
	var server, items, inproc, bare time.Duration
	for b.Loop() {
		server += phase(func(i, k int) error {
			return post(clients[i], "http://sessions/v1/sessions/"+ids[i]+"/messages", fmt.Sprintf(`{"handle":%q,"messages":[{"role":"user","parts":[{"type":"text","text":%q}]}]}`, handles[i], text(k)))
		})
		items += phase(func(i, k int) error {
			return post(clients[i], "http://sessions/v1/sessions/"+ids[i]+"/items", fmt.Sprintf(`{"handle":%q,"items":[{"role":"user","content":%q}]}`, handles[i], text(k)))
		})
		bare += phase(func(i, k int) error {
			return post(floorClients[i], fmt.Sprintf("http://floor/%d", i), fmt.Sprintf(`{"handle":%q,"messages":[{"role":"user","parts":[{"type":"text","text":%q}]}]}`, handles[i], text(k)))
		})
		inproc += phase(func(i, k int) error {
			_, err := writers[i].AddMessages(ctx, 0, []session.Message{session.TextMessage(session.RoleUser, text(k), time.Time{})})
			return err
		})
	}
	msgs := float64(n * burst * b.N)
	b.ReportMetric(msgs/server.Seconds(), "server-msgs/s")
	b.ReportMetric(msgs/items.Seconds(), "server-items/s")
	b.ReportMetric(msgs/inproc.Seconds(), "inproc-msgs/s")
	b.ReportMetric(inproc.Seconds()/server.Seconds(), "ratio")
	b.ReportMetric(inproc.Seconds()/items.Seconds(), "items-ratio")
	b.ReportMetric(msgs/bare.Seconds(), "floor-msgs/s")
	b.ReportMetric(inproc.Seconds()/bare.Seconds(), "floor-ratio")
	b.ReportMetric(bare.Seconds()/server.Seconds(), "server/floor")
}
