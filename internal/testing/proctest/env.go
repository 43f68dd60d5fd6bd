package proctest

import (
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Seed returns the seed of a process test and logs it: by default a
// number fixed by the test's name, so that every run makes the same
// choices; the decimal number in environment variable overrideEnv when
// that is set, to replay a failing run or to run the test over many seeds.
func Seed(tb testing.TB, overrideEnv string) uint64 {
	tb.Helper()
	h := fnv.New64a()
	_, _ = h.Write([]byte(tb.Name())) // a hash.Hash never fails
	seed := h.Sum64()
	if s := os.Getenv(overrideEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			tb.Fatalf("proctest: %s: %v", overrideEnv, err)
		}
	}
	tb.Logf("seed %d (%s=%d replays the choices of this run)", seed, overrideEnv, seed)
	return seed
}

// EnvInt returns the positive integer in environment variable name, or
// def when it is not set: the counts (rounds, seeds) a soak run raises.
func EnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("proctest: %s=%q: want a positive integer", name, s)
	}
	return n
}

// Fields parses a child's line "verb key=value ...": it requires the
// verb and returns the fields by key.
func Fields(tb testing.TB, line, verb string) map[string]string {
	tb.Helper()
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != verb {
		tb.Fatalf("proctest: helper line %q, want %q first", line, verb)
	}
	m := map[string]string{}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			tb.Fatalf("proctest: helper line %q: %q is not key=value", line, kv)
		}
		m[k] = v
	}
	return m
}

// Uint returns field key of fields (see Fields) as a decimal number.
func Uint(tb testing.TB, fields map[string]string, key string) uint64 {
	tb.Helper()
	n, err := strconv.ParseUint(fields[key], 10, 64)
	if err != nil {
		tb.Fatalf("proctest: field %s in %v: %v", key, fields, err)
	}
	return n
}
