package main

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// W8's CPU floor: a fresh process doing a fixed CPU-bound job (SHA-256
// over a small buffer, one goroutine, no I/O) sized to take as long as a
// search on the idle store, timed in every phase beside the searches.
// Under the writers' load it slows only because the scheduler shares
// the machine's cores with them: its p50 ÷ its idle p50 is what the load
// alone does to any fresh process of a search's length, the floor of
// the search's own ratio on this machine.

// w8CPUBlock is the buffer the job hashes, once per round.
const w8CPUBlock = 4 << 10

// w8CPUCalibrate is how many times the calibration runs each child.
const w8CPUCalibrate = 7

// w8CPUChild is the job: rounds hashings of a w8CPUBlock buffer, each
// of the last digest and the buffer. It prints the time it took.
func w8CPUChild(roundsArg string) error {
	rounds, err := strconv.Atoi(roundsArg)
	if err != nil {
		return err
	}
	start := time.Now()
	buf := make([]byte, w8CPUBlock)
	var sum [sha256.Size]byte
	for range rounds {
		copy(buf, sum[:])
		sum = sha256.Sum256(buf)
	}
	result("ns=%d sum=%x", time.Since(start).Nanoseconds(), sum[:4])
	return nil
}

// w8CalibrateCPU sizes the job on the idle store, as the phases run it:
// w8Searchers goroutines at once, each running a search then a job of a
// trial size, w8CPUCalibrate times. It returns the rounds that take the
// searches' median time, and that median.
func w8CalibrateCPU(root string) (rounds int, search time.Duration, err error) {
	const trial = 4000
	var mu sync.Mutex
	var searches, jobs []time.Duration
	errs := make(chan error, w8Searchers)
	var wg sync.WaitGroup
	for range w8Searchers {
		wg.Go(func() {
			for range w8CPUCalibrate {
				s, err := spawn("search-jsonl", root, rareWord)
				if err != nil {
					errs <- err
					return
				}
				j, err := spawn("w8-cpu", strconv.Itoa(trial))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				searches, jobs = append(searches, s.ns()), append(jobs, j.ns())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	slices.Sort(searches)
	slices.Sort(jobs)
	search, job := searches[len(searches)/2], jobs[len(jobs)/2]
	if job <= 0 {
		return 0, 0, fmt.Errorf("W8: the CPU job's trial took %s", job)
	}
	return max(1, int(float64(trial)*float64(search)/float64(job))), search, nil
}
