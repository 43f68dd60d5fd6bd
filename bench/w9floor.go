package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// W9's floors: what any resume that returns the whole session costs on
// this machine, each in a fresh process, measured beside the resume.

// w9LoadChild is the child mode w9-load DIR ID: open the store, load the
// session's latest revision and restore it — a resume without the lease
// and the append. What a resume does beyond it is the resume's own cost.
func w9LoadChild(dir, id string) error {
	start := time.Now()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := st.Load(context.Background(), session.SessionID(id))
	if err != nil {
		return err
	}
	if _, err := rec.Session(); err != nil {
		return err
	}
	result("ns=%d", time.Since(start).Nanoseconds())
	return nil
}

// pageRef finds the pages a log references.
var pageRef = regexp.MustCompile(`\{"page":\{"sha256":"([0-9a-f]{64})"`)

// w9DecodeChild is the child mode w9-decode SESSIONDIR: read every file of
// the session's directory once, on every core, decompressing the zstd ones
// into buffers of their size (one pass), hash every blob's content with
// SHA-256 (the check a store owes its reader), and JSON-decode the
// messages every page holds with the store's own decoder
// (sessnap.Unmarshal), the pages on every core. The floor of returning the
// session: its bytes read, decompressed, checked and decoded once each.
// (The log's inline tail, at most 1 MiB of messages, is read, not
// decoded.)
func w9DecodeChild(dir string) error {
	start := time.Now()
	log, err := os.ReadFile(filepath.Join(dir, jsonlstore.LogFile))
	if err != nil {
		return err
	}
	pages := map[string]bool{}
	for _, m := range pageRef.FindAllSubmatch(log, -1) {
		pages[string(m[1])] = true
	}
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Base(path) != jsonlstore.LogFile {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	work := make(chan string)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			if err != nil {
				errs <- err
				return
			}
			defer dec.Close()
			for path := range work {
				if err := w9DecodeFile(dec, path, pages); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	result("ns=%d pages=%d", time.Since(start).Nanoseconds(), len(pages))
	return nil
}

func w9DecodeFile(dec *zstd.Decoder, path string, pages map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	hash, compressed := strings.CutSuffix(name, ".zst")
	if compressed {
		var h zstd.Header
		size := 0
		if h.Decode(data) == nil && h.HasFCS {
			size = int(h.FrameContentSize)
		}
		if data, err = dec.DecodeAll(data, make([]byte, 0, size)); err != nil {
			return err
		}
	}
	if filepath.Base(filepath.Dir(path)) != jsonlstore.BlobDir {
		return nil
	}
	sha256.Sum256(data)
	if !pages[hash] {
		return nil
	}
	snap := make([]byte, 0, len(data)+16)
	snap = append(append(append(snap, `{"messages":[`...), data...), "]}"...)
	s, err := sessnap.Unmarshal(bytes.TrimSpace(snap))
	_ = s
	return err
}
