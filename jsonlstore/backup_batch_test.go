package jsonlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/crashtest"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// bbSessions is more sessions than a full backup stages in one batch
// (offline's batchSessions), so that a batch is published while the next
// is staged.
const bbSessions = 600

// TestBackupBatchPublishFails: a full backup publishes a batch (its
// SyncAll, renames and root sync) while it stages the next; when
// publishing fails — the first batch's flush, the second's, a rename
// in the middle of the first — the backup fails, leaves no temporary
// directory and publishes nothing after the failure, every session it
// did publish is whole, and a rerun copies the rest.
func TestBackupBatchPublishFails(t *testing.T) {
	ctx := context.Background()
	for name, fault := range map[string]vfs.Fault{
		"first flush":  {Op: vfs.OpSyncAll},
		"second flush": {Op: vfs.OpSyncAll, After: 1},
		"a rename":     {Op: vfs.OpRenameNoReplace, After: 100},
	} {
		t.Run(name, func(t *testing.T) {
			sim := vfs.NewSim()
			faulty := vfs.NewFaulty(sim)
			var st [2]*Store
			for i, dir := range []string{"src", "dst"} {
				require.NoError(t, sim.Mkdir(dir, 0o700))
				sub, err := vfs.Sub(faulty, dir)
				require.NoError(t, err)
				plain, err := vfs.Sub(sim, dir)
				require.NoError(t, err)
				root := "/sim/bb-" + dir
				st[i] = newStore(root, nil, sub, newSimLeaser(plain, root), Options{Now: crashtest.Clock(sessiontest.Epoch)})
			}
			a, b := st[0], st[1]
			for i := range bbSessions {
				id := session.SessionID(fmt.Sprintf("bb%04d", i))
				w, err := a.Create(ctx, plSnapshot(id, 1, 0), sessionstore.AcquireOptions{})
				require.NoError(t, err)
				require.NoError(t, w.Release(ctx))
			}
			backup := func() (maintenance.BackupReport, error) {
				var rep maintenance.BackupReport
				_, err := a.offline().Backup(ctx, b.offline(), nil, a.forSessions, maintenance.BackupOptions{}, &rep)
				return rep, err
			}
			// what dst holds: its sessions, and no temporary directory
			published := func() int {
				names, err := vfs.ReadDirNames(sim, "dst")
				require.NoError(t, err)
				n := 0
				for _, name := range names {
					require.False(t, strings.HasPrefix(name, layout.TmpDirPrefix), "a temporary directory is left: %s", name)
					if strings.HasPrefix(name, "bb") {
						n++
					}
				}
				return n
			}

			faulty.Inject(fault)
			_, err := backup()
			require.Error(t, err)
			require.Equal(t, 1, faulty.Fired(fault.Op), "the fault fired")
			n := published()
			switch name {
			case "first flush":
				require.Zero(t, n, "nothing is published before its batch is durable")
			case "second flush":
				require.Equal(t, 512, n, "the first batch is published, the second is not")
			case "a rename":
				require.Equal(t, 100, n, "the renames before the failed one")
			}
			v, err := b.Verify(ctx)
			require.NoError(t, err)
			require.True(t, v.OK(), "%+v", v)

			faulty.Clear()
			rep, err := backup()
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep)
			require.Len(t, rep.Sessions, bbSessions-n)
			require.Equal(t, bbSessions, published())
			v, err = b.Verify(ctx)
			require.NoError(t, err)
			require.True(t, v.OK(), "%+v", v)
			require.Len(t, v.Sessions, bbSessions)
		})
	}
}
