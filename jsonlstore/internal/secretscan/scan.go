package secretscan

import (
	"context"
	"iter"
	"runtime"
	"sync"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// Target is one session to scan: live, or in the retired area.
type Target struct {
	ID      session.SessionID
	Retired bool
}

// Run scans the targets with r, in order, yielding each one's findings
// (package doc). An error ends the scan.
func Run(ctx context.Context, root *layout.Root, area *retire.Area, r *redact.Redactor, targets []Target) iter.Seq2[sessionstore.SecretFinding, error] {
	return func(yield func(sessionstore.SecretFinding, error) bool) {
		if r.Off() || len(targets) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			found []sessionstore.SecretFinding
			err   error
		}
		results := make([]chan result, len(targets))
		for i := range results {
			results[i] = make(chan result, 1)
		}
		blobs := newVerdicts()
		next := make(chan int)
		workers := min(runtime.GOMAXPROCS(0), len(targets))
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				peek := blobfile.NewPeeker()
				defer peek.Close()
				for i := range next {
					found, err := scanTarget(ctx, root, area, r, blobs, peek, targets[i])
					results[i] <- result{found, err}
				}
			}()
		}
		go func() {
			defer close(next)
			for i := range targets {
				select {
				case next <- i:
				case <-ctx.Done():
					return
				}
			}
		}()
		defer wg.Wait()
		defer cancel()
		for i := range targets {
			var res result
			select {
			case res = <-results[i]:
			case <-ctx.Done():
				yield(sessionstore.SecretFinding{}, ctx.Err())
				return
			}
			if res.err != nil {
				yield(sessionstore.SecretFinding{}, res.err)
				return
			}
			for _, f := range res.found {
				if !yield(f, nil) {
					return
				}
			}
		}
	}
}

// scanTarget scans one session, a retired one unpacked into memory.
func scanTarget(ctx context.Context, root *layout.Root, area *retire.Area, r *redact.Redactor, blobs *verdicts, peek *blobfile.Peeker, t Target) ([]sessionstore.SecretFinding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	at := *root
	var where func(archived bool) string
	scope := ""
	if t.Retired {
		scope = "retired"
		mem := vfs.NewSim()
		if _, err := area.Unpack(t.ID, mem, layout.SessionDir(t.ID)); err != nil {
			return nil, layout.OpErr("scan", t.ID, err)
		}
		at.FS = mem
		where = func(bool) string { return sessionstore.WhereRetired }
	} else {
		where = func(archived bool) string {
			if archived {
				return sessionstore.WhereArchive
			}
			return sessionstore.WhereLog
		}
	}
	s := newSessionScan(&at, t.ID, r, blobs, peek, scope, where)
	if err := s.history(ctx); err != nil {
		return nil, err
	}
	if err := s.forensics(t.Retired); err != nil {
		return nil, err
	}
	return s.out, nil
}

// verdicts remembers, by file, whether a blob holds a secret (shared by
// the sessions a scan reads at once).
type verdicts struct {
	mu sync.Mutex
	m  map[fileKey]bool
}

// fileKey names a blob file: by its identity in the store's file system,
// or, where a file has none or lives elsewhere (a retired session
// unpacked into memory), by its session's scope and its hash.
type fileKey struct {
	ident vfs.Identity
	scope string
	hash  string
}

func newVerdicts() *verdicts { return &verdicts{m: map[fileKey]bool{}} }

func (v *verdicts) get(key fileKey) (hit, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	hit, ok = v.m[key]
	return hit, ok
}

func (v *verdicts) put(key fileKey, hit bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m[key] = hit
}
