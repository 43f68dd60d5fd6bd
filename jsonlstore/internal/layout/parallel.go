package layout

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Parallel calls fn(i) for i in [0, n) from a few goroutines (the work is
// mostly system calls) and returns the first error. All have returned
// when it returns.
func Parallel(ctx context.Context, n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), 8, n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		errOnce.Do(func() { first = err })
		failed.Store(true)
	}
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				if err := fn(i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
