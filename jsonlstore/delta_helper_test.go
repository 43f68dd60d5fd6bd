package jsonlstore

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
)

// rebuildAll returns the snapshot of each of recs, consecutive records
// from a full one, applying deltas: what a checker compares with the
// snapshots a workload wrote.
func rebuildAll(recs []record.Rec) ([][]byte, error) {
	out := make([][]byte, len(recs))
	var prev []byte
	for i, r := range recs {
		switch r.Kind {
		case record.KindFull:
			prev = r.Payload
		case record.KindDelta:
			if prev == nil {
				return nil, fmt.Errorf("revision %d is a delta without a base", r.Rev)
			}
			snap, err := record.Apply(prev, r.Payload, sessionstore.DefaultMaxRecordBytes)
			if err != nil {
				return nil, fmt.Errorf("revision %d: %w", r.Rev, err)
			}
			prev = snap
		default:
			return nil, fmt.Errorf("revision %d: kind %q", r.Rev, r.Kind)
		}
		out[i] = prev
	}
	return out, nil
}

// logKinds counts the kinds of the valid records of a log file.
func logKinds(tb testing.TB, path string) map[string]int {
	tb.Helper()
	data, err := os.ReadFile(path)
	require.NoError(tb, err)
	return kindsOf(data)
}

// kindsOf counts the kinds of the valid lines of log.
func kindsOf(log []byte) map[string]int {
	kinds := map[string]int{}
	for _, l := range bytes.SplitAfter(log, []byte("\n")) {
		if len(l) == 0 || l[len(l)-1] != '\n' {
			continue
		}
		if r, err := parseLine(l[:len(l)-1], sessionstore.DefaultMaxRecordBytes); err == nil {
			kinds[r.Kind]++
		}
	}
	return kinds
}

// revisionKinds maps each revision of the valid lines of log to its kind.
func revisionKinds(log []byte) map[uint64]string {
	kinds := map[uint64]string{}
	for _, l := range bytes.SplitAfter(log, []byte("\n")) {
		if len(l) == 0 || l[len(l)-1] != '\n' {
			continue
		}
		if r, err := parseLine(l[:len(l)-1], sessionstore.DefaultMaxRecordBytes); err == nil {
			kinds[r.Rev] = r.Kind
		}
	}
	return kinds
}

// chainStart returns the revision of the full record that the chain of
// revision rev starts at, in log: where a compaction keeping rev cuts.
func chainStart(log []byte, rev uint64) uint64 {
	kinds := revisionKinds(log)
	for rev > 1 && kinds[rev] == record.KindDelta {
		rev--
	}
	return rev
}
