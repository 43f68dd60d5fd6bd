package jsonlstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/jsonlstore/internal/catalogfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
)

// TestNamesAreTheRooms ties the names this package exports, written as
// literals so that its documentation names no internal package, to the
// names the rooms use.
func TestNamesAreTheRooms(t *testing.T) {
	require.Equal(t, layout.LogFile, LogFile)
	require.Equal(t, layout.SummaryFile, SummaryFile)
	require.Equal(t, layout.ArchiveDir, ArchiveDir)
	require.Equal(t, layout.ForensicDir, ForensicDir)
	require.Equal(t, layout.BlobDir, BlobDir)
	require.Equal(t, layout.SettingsFile, SettingsFile)
	require.Equal(t, layout.MaxReadRecordBytes, MaxReadRecordBytes)
	require.Equal(t, catalogfile.Dir, CatalogDir)
}
