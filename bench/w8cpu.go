package main

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
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

// w8CalibrateCPU sizes the job: one child at a time on the idle store,
// it times w8CPUCalibrate searches and as many jobs of a trial size, and
// returns the rounds that take the searches' median time.
func w8CalibrateCPU(root string) (rounds int, search time.Duration, err error) {
	const trial = 4000
	median := func(mode string, args ...string) (time.Duration, error) {
		var ds []time.Duration
		for range w8CPUCalibrate {
			res, err := spawn(mode, args...)
			if err != nil {
				return 0, err
			}
			ds = append(ds, res.ns())
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	if search, err = median("search-jsonl", root, rareWord); err != nil {
		return 0, 0, err
	}
	job, err := median("w8-cpu", fmt.Sprint(trial))
	if err != nil {
		return 0, 0, err
	}
	if job <= 0 {
		return 0, 0, fmt.Errorf("W8: the CPU job's trial took %s", job)
	}
	rounds = max(1, int(float64(trial)*float64(search)/float64(job)))
	return rounds, search, nil
}
