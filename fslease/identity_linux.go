package fslease

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the start time in /proc/<pid>/stat. The kernel
// exports clock ticks to user space in USER_HZ, which is 100 on every
// architecture Go supports on Linux.
const userHZ = 100

// platformIdentity returns the process start time (wall clock and raw
// ticks since boot) and the boot ID; zero values where /proc is unavailable.
func platformIdentity(int) (start time.Time, ticks uint64, bootID string) {
	if data, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		bootID = string(bytes.TrimSpace(data))
	}
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, 0, bootID
	}
	ticks, ok := parseStatStartTicks(data)
	if !ok {
		return time.Time{}, 0, bootID
	}
	if stat, err := os.ReadFile("/proc/stat"); err == nil {
		if btime, ok := parseBootTime(stat); ok {
			sec, frac := ticks/userHZ, ticks%userHZ
			start = time.Unix(btime+int64(sec), int64(frac)*int64(time.Second/userHZ)).UTC() //nolint:gosec // G115: sec <= MaxUint64/userHZ and frac < userHZ both fit an int64
		}
	}
	return start, ticks, bootID
}

// parseStatStartTicks returns field 22 (starttime) of a /proc/<pid>/stat
// line. Field 2, the command name in parentheses, may itself contain spaces
// and parentheses, so fields are counted from the last ')'.
func parseStatStartTicks(stat []byte) (uint64, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	const idx = 22 - 3 // fields after ')' start with field 3 (state)
	if len(fields) <= idx {
		return 0, false
	}
	t, err := strconv.ParseUint(string(fields[idx]), 10, 64)
	return t, err == nil
}

// parseBootTime returns the "btime" line of /proc/stat: the boot time in
// seconds since the epoch.
func parseBootTime(stat []byte) (int64, bool) {
	for line := range bytes.Lines(stat) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			b, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			return b, err == nil
		}
	}
	return 0, false
}
