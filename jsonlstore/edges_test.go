package jsonlstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
)

// A store root may share its directory with other things (--dir $HOME):
// the store acts only on what it made. SECURITY.md maps threats to these
// tests.

// TestRepairSweepsOnlyOurLeftovers: repair's sweep removes old, unheld
// directories named exactly as the store names its temporary and trash
// directories — .tmp-<valid ID>-<16 lower-case hex digits>, likewise
// .trash- — and nothing else, however old and whatever its prefix.
func TestRepairSweepsOnlyOurLeftovers(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "sess", 1)
	old := time.Now().Add(-24 * time.Hour)
	cases := map[string]bool{ // name → swept
		".tmp-a-0123456789abcdef":              true,
		".trash-b-fedcba9876543210":            true,
		".tmp-01JDXEXAMPLE-0-a1b2c3d4e5f6a7b8": true, // an ID with dashes
		".trash-2023-photos":                   false,
		".trash-photos-2023":                   false,
		".tmp-":                                false,
		".tmp-x":                               false,
		".tmp--0123456789abcdef":               false, // no ID
		".tmp-.hidden-0123456789abcdef":        false, // not a valid ID
		".tmp-a-0123456789ABCDEF":              false, // upper case: not ours
		".tmp-a-0123456789abcde":               false, // 15 digits
		".tmp-a-0123456789abcdef0":             false, // 17 digits
		".trash-a-0123456789abcdeg":            false,
		".tmpfoo-a-0123456789abcdef":           false,
		".Trash-1000":                          false,
	}
	for name := range cases {
		dir := filepath.Join(st.Dir(), name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o600))
		require.NoError(t, os.Chtimes(dir, old, old))
	}
	rep, err := st.Repair(ctx, "sess", maintenance.RepairOptions{})
	require.NoError(t, err)
	var want []string
	for name, swept := range cases {
		if swept {
			want = append(want, name)
		}
		_, err := os.Stat(filepath.Join(st.Dir(), name, "keep.txt"))
		require.Equal(t, !swept, err == nil, "%s", name)
	}
	require.ElementsMatch(t, want, rep.Swept)
}

// TestBackupInsideStoreRefused: a backup destination that is the store's
// root, lies below it (a new directory, a session directory, a session's
// archive/), or reaches it through a symlink is refused with
// ErrBackupInsideStore before anything is created; one beside it works.
func TestBackupInsideStoreRefused(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "sess", 3)
	w, err := st.Acquire(ctx, "sess", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	_, err = w.(maintenance.Compactor).Compact(ctx, maintenance.CompactPolicy{KeepLast: 1})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	outside := t.TempDir()
	link := filepath.Join(outside, "link")
	require.NoError(t, os.Symlink(st.Dir(), link))
	before := tree(t, st.Dir())

	for _, dest := range []string{
		st.Dir(),
		st.Dir() + "/",
		filepath.Join(st.Dir(), "backup"),
		filepath.Join(st.Dir(), "backup", "deeper"),
		filepath.Join(st.Dir(), "sess"),
		filepath.Join(st.Dir(), "sess", "copy"),
		filepath.Join(st.Dir(), "sess", ArchiveDir),
		link,
		filepath.Join(link, "backup"),
		filepath.Join(st.Dir(), "..", filepath.Base(st.Dir()), "backup"),
	} {
		_, err := st.Backup(ctx, dest)
		require.ErrorIs(t, err, ErrBackupInsideStore, "%s", dest)
	}
	require.Equal(t, before, tree(t, st.Dir()), "nothing was created in the store")

	rep, err := st.Backup(ctx, filepath.Join(outside, "backup"))
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Len(t, rep.Sessions, 1)
}

// TestAcquireSweepsOnlyOurTemps: the holder's sweep of a session directory
// removes the temporary files the store writes there (a compaction's new
// log, a replacement summary.json) and nothing else.
func TestAcquireSweepsOnlyOurTemps(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	toolSession(t, st, "sess", 2)
	cases := map[string]bool{ // name → swept
		"." + LogFile + ".compact-0123456789abcdef.tmp": true,
		"." + SummaryFile + "-0123456789abcdef.tmp":     true,
		".notes.tmp":                                    false,
		"." + LogFile + ".compact-mine.tmp":             false,
		"." + SummaryFile + "-0123456789abcdef.tmp.bak": false,
	}
	for name := range cases {
		require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), "sess", name), []byte("x"), 0o600))
	}
	w, err := st.Acquire(ctx, "sess", sessionstore.AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	var want []string
	for name, swept := range cases {
		if swept {
			want = append(want, "sess/"+name)
		}
		_, err := os.Stat(filepath.Join(st.Dir(), "sess", name))
		require.Equal(t, !swept, err == nil, "%s", name)
	}
	require.ElementsMatch(t, want, w.Recovery().Swept)
}
