package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
)

// flipFullRecord writes session id into the directory store dir, n
// revisions of one new message each, and flips a bit in the middle of the
// first full record after revision 1 that another full record follows.
// It returns the revisions of the two full records: salvage sets aside
// the first up to the one before the second.
func flipFullRecord(t *testing.T, dir, id string, n int) (damaged, nextFull uint64) {
	t.Helper()
	ctx := context.Background()
	st, err := jsonlstore.Open(dir, jsonlstore.Options{})
	require.NoError(t, err)
	s := sessiontest.New(id)
	w, err := st.Create(ctx, sessiontest.Snap(t, s), sessionstore.AcquireOptions{})
	require.NoError(t, err)
	for i := 2; i <= n; i++ {
		require.NoError(t, s.AppendMessage(session.TextMessage(session.RoleUser, fmt.Sprintf("message %d", i), sessiontest.Epoch)))
		_, err := w.Append(ctx, w.Revision(), sessiontest.Snap(t, s))
		require.NoError(t, err)
	}
	require.NoError(t, w.Release(ctx))
	require.NoError(t, st.Close())

	path := filepath.Join(dir, id, jsonlstore.LogFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var off, flip int
	for line := range bytes.Lines(data) {
		var rec struct {
			Rev  uint64 `json:"rev"`
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(line, &rec))
		if rec.Kind == "full" && rec.Rev > 1 {
			if damaged == 0 {
				damaged, flip = rec.Rev, off+len(line)/2
			} else {
				nextFull = rec.Rev
				break
			}
		}
		off += len(line)
	}
	require.NotZero(t, nextFull, "two full records after revision 1 within %d revisions", n)
	data[flip] ^= 0x04
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return damaged, nextFull
}

// TestCompactSalvagedCLI: a log salvaged around a damaged full record,
// then compacted so that the gap record is the last one archived, keeps
// its readable history: verify exits 0, an archived revision shows, and
// repair, plain or salvaging, exits 0 finding nothing (the archive's
// manifest named the gap's first revision as its last, and all of them
// failed). Salvage says what it found.
func TestCompactSalvagedCLI(t *testing.T) {
	root := t.TempDir()
	const n = 24
	first, next := flipFullRecord(t, root, "sv", n)

	r := sessions(t, nil, "--dir", root, "verify", "sv")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	r = sessions(t, nil, "--dir", root, "repair", "sv", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.NotContains(t, r.Stdout, "no corruption")
	require.Regexp(t, fmt.Sprintf(`found: sv/log.jsonl offset \d+ \(revision %d\)`, first), r.Stdout)
	require.Contains(t, r.Stdout, fmt.Sprintf("missing: revisions %d-%d", first, next-1))
	r = sessions(t, nil, "--dir", root, "verify", "sv")
	require.Equal(t, exitOK, r.Code, r.String())

	// Keep the full record after the gap and what follows it: the gap is
	// the last record archived.
	keep := n - int(next) + 1
	r = sessions(t, nil, "--dir", root, "compact", "--keep-last", fmt.Sprint(keep), "--json", "sv")
	require.Equal(t, exitOK, r.Code, r.String())
	manifest, err := os.ReadFile(filepath.Join(root, "sv", jsonlstore.ArchiveDir, "manifest.json"))
	require.NoError(t, err)
	require.Contains(t, string(manifest), fmt.Sprintf(`"first":1,"last":%d,`, next-1), "the segment ends where the gap does")

	r = sessions(t, nil, "--dir", root, "verify", "sv")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, fmt.Sprintf("revisions %d to %d are missing", first, next-1))
	for _, rev := range []uint64{2, first - 1, next} {
		r = sessions(t, nil, "--dir", root, "show", "sv", "--rev", fmt.Sprint(rev))
		require.Equal(t, exitOK, r.Code, "revision %d: %s", rev, r.String())
		require.Contains(t, r.Stdout, fmt.Sprintf("message %d", rev))
	}
	r = sessions(t, nil, "--dir", root, "show", "sv", "--rev", fmt.Sprint(first))
	require.Equal(t, exitFail, r.Code, r.String())
	require.Contains(t, r.Stderr, "missing")
	r = sessions(t, nil, "--dir", root, "repair", "sv")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "found: no corruption")
	r = sessions(t, nil, "--dir", root, "repair", "sv", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.NotContains(t, r.Stdout, "salvaged:")
}

// TestRepairOldGapManifestCLI: the sequence on a store an older
// release compacted across a gap — its manifest lists the segment as
// ending at the gap's first revision ({"first":1,"last":9,"records":9}
// for a gap of 9-16) — used to leave verify, show --rev and every repair
// failing; repair now corrects the manifest and says so, and the
// archived revisions read again.
func TestRepairOldGapManifestCLI(t *testing.T) {
	root := t.TempDir()
	const n = 24
	first, next := flipFullRecord(t, root, "sv", n)
	r := sessions(t, nil, "--dir", root, "repair", "sv", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	r = sessions(t, nil, "--dir", root, "compact", "--keep-last", fmt.Sprint(n-int(next)+1), "sv")
	require.Equal(t, exitOK, r.Code, r.String())

	// Age the archive: the segment 1..next-1 listed, and named, as the
	// older compaction did, by its record count (first records).
	dir := filepath.Join(root, "sv", jsonlstore.ArchiveDir)
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	body, ok := record.Unframe(b)
	require.True(t, ok)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	segs := m["segments"].([]any)
	require.Len(t, segs, 1)
	seg := segs[0].(map[string]any)
	require.EqualValues(t, first, seg["records"])
	newName := fmt.Sprintf("%020d-%020d.zst", 1, next-1)
	oldName := fmt.Sprintf("%020d-%020d.zst", 1, first)
	require.Equal(t, newName, seg["file"])
	seg["last"], seg["file"] = first, oldName
	framed, err := record.Frame(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), framed, 0o600))
	require.NoError(t, os.Rename(filepath.Join(dir, newName), filepath.Join(dir, oldName)))

	r = sessions(t, nil, "--dir", root, "verify", "sv")
	require.Equal(t, exitCorrupt, r.Code, r.String())
	require.Contains(t, r.Stdout, fmt.Sprintf("archives end at revision %d but the log starts at %d", first, next))
	r = sessions(t, nil, "--dir", root, "repair", "sv")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, fmt.Sprintf("archive: segment %s holds revisions 1-%d, not 1-%d as an older compaction listed it; renamed %s", oldName, next-1, first, newName))
	require.Contains(t, r.Stdout, "found: no corruption")
	r = sessions(t, nil, "--dir", root, "verify", "sv")
	require.Equal(t, exitOK, r.Code, r.String())
	for _, rev := range []uint64{2, first - 1, next} {
		r = sessions(t, nil, "--dir", root, "show", "sv", "--rev", fmt.Sprint(rev))
		require.Equal(t, exitOK, r.Code, "revision %d: %s", rev, r.String())
		require.Contains(t, r.Stdout, fmt.Sprintf("message %d", rev))
	}
	r = sessions(t, nil, "--dir", root, "repair", "sv", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.NotContains(t, r.Stdout, "archive:")
}

// TestRepairAfterSalvagedPageCLI: after salvage sets aside the records
// whose page is damaged, repair exits 0 (it exited 1 forever, reading the
// damaged page the forensic copy references to collect blobs) and says
// why no blob was removed.
func TestRepairAfterSalvagedPageCLI(t *testing.T) {
	root := t.TempDir()
	pagedSession(t, root)
	blobs := filepath.Join(root, "paged", jsonlstore.BlobDir)
	entries, err := os.ReadDir(blobs)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	page := filepath.Join(blobs, entries[0].Name())
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(page, data[:len(data)/2], 0o600))

	r := sessions(t, nil, "--dir", root, "repair", "paged", "--salvage")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "found: paged/log.jsonl offset")
	require.Contains(t, r.Stdout, "paged/blobs/"+entries[0].Name())
	require.Contains(t, r.Stdout, "blobs: none removed: page paged/blobs/"+entries[0].Name())
	r = sessions(t, nil, "--dir", root, "repair", "paged")
	require.Equal(t, exitOK, r.Code, r.String())
	require.Contains(t, r.Stdout, "found: no corruption")
	r = sessions(t, nil, "--dir", root, "verify", "paged")
	require.Equal(t, exitOK, r.Code, r.String())
	_, err = os.Stat(page)
	require.NoError(t, err, "the forensic copy references the page")
}
