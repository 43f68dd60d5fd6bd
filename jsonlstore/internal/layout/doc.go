// Package layout is the bottom room of the file store: the names and
// permissions of everything under a store root (FORMAT.md "Layout"), the
// random suffixes of temporary names and which leftovers are the store's,
// settings.json (FORMAT.md "settings.json"), the framing of the store's
// small JSON files, the opening and check of the root (its owner and
// mode), the publishing of a new session's directory, the store's
// operational errors (its sentinels are package maintenance's), and Root:
// the root as every other room sees it (a file system, the store's caps,
// its clock and logger).
//
// # Layout
//
//	ROOT/
//	  <session-id>/            DirPerm (SessionDir)
//	    log.jsonl              FilePerm (LogFile, LogPath)
//	    summary.json           (SummaryFile, SummaryPath)
//	    settings.json          the record cap the log was written with (SettingsFile)
//	    archive/               (ArchiveDir)
//	    forensic/              (ForensicDir)
//	    .<file>-<16 hex>.tmp   a file being replaced (IsSessionTemp)
//	  .tmp-<id>-<16 hex>/      a session being created (TmpDirPrefix, IsLeftover)
//	  .trash-<id>-<16 hex>/    a session being deleted (TrashPrefix, IsLeftover)
//
// It must never import another package of jsonlstore: every room imports
// it, so it holds names, not behaviour; and it never reads or writes a
// log, an archive, a blob or a cache.
package layout
