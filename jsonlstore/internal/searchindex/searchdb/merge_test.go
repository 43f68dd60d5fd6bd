package searchdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/fulltext"
	"github.com/sessionstore/sessionstore/session"
)

// TestSegmentsMergedAtSixteen: a new index's FTS5 configuration says
// automerge 16 (FTS5's default, 4, made every write merge a share of the
// lower levels); its lowest level takes 15 one-document writes unmerged
// and the 16th merges them, and every document is still found.
func TestSegmentsMergedAtSixteen(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "index.db")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	db, err := Open(ctx, p, OpenOptions{Create: true})
	require.NoError(t, err)
	defer db.Close()
	raw, err := sql.Open("sqlite", rawURI(t, p, "?mode=ro"))
	require.NoError(t, err)
	defer raw.Close()
	var automerge string
	require.NoError(t, raw.QueryRowContext(ctx, "SELECT quote(v) FROM docs_config WHERE k = 'automerge'").Scan(&automerge))
	require.Equal(t, "16", automerge)
	segments := func() int {
		// fts5_structure is a debugging function SQLite's builds may
		// lack: count the segments by their rows in docs_idx instead
		// (one per segment whose first leaf holds a term: every
		// segment here, one document each).
		var n int
		require.NoError(t, raw.QueryRowContext(ctx, "SELECT count(DISTINCT segid) FROM docs_idx").Scan(&n))
		return n
	}
	for i := range 16 {
		_, err := db.Apply(ctx, []Update{{ID: session.SessionID(fmt.Sprintf("s%02d", i)), Reset: true, Rev: 1, Messages: 1,
			Add: []Message{{Index: 0, Rev: 1, Doc: fulltext.Doc{Role: session.RoleUser, Text: fmt.Sprintf("amber word%02d", i)}}}}}, NoWait)
		require.NoError(t, err)
		if i == 14 {
			require.Equal(t, 15, segments(), "15 writes, nothing merged yet")
		}
	}
	require.Equal(t, 1, segments(), "the 16th write merged the level")
	q, _ := fulltext.Parse("amber")
	hits, err := db.Search(ctx, q, Filter{}, 0)
	require.NoError(t, err)
	require.Len(t, hits, 16)
}

// TestVersionOneReplaced: an index made by a program of version 1 (the
// same tables, FTS5's default merging) is another version's: Open
// refuses it with ErrOtherVersion, so a search replaces it with a new
// one; an index of version 1's tables carrying version 2 (its
// configuration not a new index's) is damaged.
func TestVersionOneReplaced(t *testing.T) {
	ctx := context.Background()
	v1 := strings.Replace(strings.Replace(schema, "INSERT INTO docs(docs, rank) VALUES ('automerge', 16);", "", 1),
		"PRAGMA user_version = 2;", "PRAGMA user_version = 1;", 1)
	require.NotEqual(t, schema, v1)
	for _, c := range []struct {
		name, sql string
		want      error
	}{
		{"version 1", v1, ErrOtherVersion},
		{"version 1 numbered 2", strings.Replace(v1, "PRAGMA user_version = 1;", "PRAGMA user_version = 2;", 1), ErrDamaged},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "index.db")
			raw, err := sql.Open("sqlite", rawURI(t, p, "?mode=rwc"))
			require.NoError(t, err)
			_, err = raw.ExecContext(ctx, c.sql)
			require.NoError(t, err)
			require.NoError(t, raw.Close())
			_, err = Open(ctx, p, OpenOptions{})
			require.ErrorIs(t, err, c.want)
		})
	}
}
