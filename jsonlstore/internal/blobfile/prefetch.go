package blobfile

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Prefetching reads blobs into a cache on as many goroutines as there are
// cores, up to what the cache holds (a read past that is not kept), so
// that the fetches that follow find them read, decompressed and checked.
// A blob that fails to read is left out: the fetch that needs it reads it
// again and reports why. Pages are read first; a page's blobs are found
// in it once it is read, so the blobs of a record's first pages are read
// while its later pages are. The blobs are read in the order the
// conversation references them, so that what the cache holds, when it
// cannot hold them all, is the conversation's first blobs, which a
// resolve in order uses before it fetches one more.

// PrefetchRefs starts reading the blobs the parts of ms, messages decoded
// without their content, reference; Wait waits for them, and so does the
// function it returns.
func (c *Cache) PrefetchRefs(ms sessnap.Messages) func() {
	q := newFetchQueue(c)
	c.mu.Lock()
	ms.Refs(func(ref session.ContentRef) { q.addBlob(ref.SHA256) })
	c.mu.Unlock()
	q.start()
	return c.Wait
}

// PrefetchRecord starts reading the pages snap, a stored snapshot,
// references and, unless c is light, the blobs its messages reference
// (found in its bytes and its pages', ScanRefs). pages waits for the
// pages (record.Unpage then finds them read); Wait waits for everything.
func (c *Cache) PrefetchRecord(snap []byte) (pages func()) {
	q := newFetchQueue(c)
	c.mu.Lock()
	ScanRefs(snap, func(hash string, page bool) {
		if page {
			q.addPage(hash)
		} else if !c.light {
			q.addBlob(hash)
		}
	})
	c.mu.Unlock()
	q.start()
	return q.pagesLeft.Wait
}

// fetchQueue is one prefetch's work: pages first, then blobs, in runs in
// the order the conversation references them (a page's run is filled
// once the page is read).
type fetchQueue struct {
	c      *Cache
	mu     sync.Mutex
	cond   sync.Cond // signalled when a page read ends
	pages  []string  // pages not yet taken
	runs   [][]string
	run    map[string]int // a page's hash -> its run
	seen   map[string]bool
	open   int // pages taken and not yet read
	budget atomic.Int64

	pagesLeft sync.WaitGroup
}

func newFetchQueue(c *Cache) *fetchQueue {
	q := &fetchQueue{c: c, runs: [][]string{nil}, run: map[string]int{}, seen: map[string]bool{}}
	q.cond.L = &q.mu
	return q
}

// addPage queues page hash, unless cached or queued (c.mu held).
func (q *fetchQueue) addPage(hash string) {
	if _, cached := q.c.m[hash]; cached || q.seen[hash] {
		return
	}
	q.seen[hash] = true
	q.pages = append(q.pages, hash)
	q.run[hash] = len(q.runs)
	q.runs = append(q.runs, nil, nil) // the page's run, then the blobs after it
}

// addBlob queues blob hash in the last run, unless cached or queued (c.mu
// held).
func (q *fetchQueue) addBlob(hash string) {
	if _, cached := q.c.m[hash]; cached || q.seen[hash] {
		return
	}
	q.seen[hash] = true
	q.runs[len(q.runs)-1] = append(q.runs[len(q.runs)-1], hash)
}

// start starts the workers, when there are at least two reads to share.
func (q *fetchQueue) start() {
	n := len(q.pages)
	for _, r := range q.runs {
		n += len(r)
	}
	if n < 2 && len(q.pages) == 0 {
		return
	}
	q.c.open()
	q.c.mu.Lock()
	q.budget.Store(cacheBytes - q.c.size)
	q.c.mu.Unlock()
	q.pagesLeft.Add(len(q.pages))
	workers := runtime.GOMAXPROCS(0)
	q.c.inflight.Add(workers)
	for range workers {
		go q.work()
	}
}

func (q *fetchQueue) work() {
	defer q.c.inflight.Done()
	for {
		h, page, ok := q.next()
		if !ok {
			return
		}
		var b []byte
		var err error
		if q.budget.Load() > 0 {
			b, err = ReadVia(q.c.fs, q.c.dir, q.c.id, session.ContentRef{SHA256: h, Size: SizeJustified})
			if err == nil && q.budget.Add(-int64(len(b))) >= 0 {
				q.c.mu.Lock()
				if _, ok := q.c.m[h]; !ok {
					q.c.m[h] = b
					q.c.size += int64(len(b))
				}
				q.c.mu.Unlock()
			}
		}
		if page {
			q.pageRead(h, b, err == nil && b != nil && !q.c.light)
		}
	}
}

// next takes the next hash to read: a page, else the first blob of the
// first run with one, waiting while none is left but a page being read
// may add some; ok is false when all is taken (or the budget spent).
func (q *fetchQueue) next() (hash string, page, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if len(q.pages) > 0 {
			hash, q.pages = q.pages[0], q.pages[1:]
			q.open++
			return hash, true, true
		}
		if q.budget.Load() <= 0 {
			return "", false, false
		}
		for i := range q.runs {
			if r := q.runs[i]; len(r) > 0 {
				hash, q.runs[i] = r[0], r[1:]
				return hash, false, true
			}
		}
		if q.open == 0 {
			return "", false, false
		}
		q.cond.Wait()
	}
}

// pageRead ends the read of page hash, whose content b, when scan, is
// scanned for the blobs it references.
func (q *fetchQueue) pageRead(hash string, b []byte, scan bool) {
	var found []string
	if scan {
		ScanRefs(b, func(h string, page bool) {
			if !page {
				found = append(found, h)
			}
		})
	}
	q.mu.Lock()
	q.c.mu.Lock()
	i := q.run[hash]
	for _, h := range found {
		if _, cached := q.c.m[h]; !cached && !q.seen[h] {
			q.seen[h] = true
			q.runs[i] = append(q.runs[i], h)
		}
	}
	q.c.mu.Unlock()
	q.open--
	q.mu.Unlock()
	q.cond.Broadcast()
	q.pagesLeft.Done()
}
