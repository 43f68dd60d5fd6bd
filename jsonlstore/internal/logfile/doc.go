// Package logfile owns a session's log.jsonl as readers see it, and its
// summary.json (FORMAT.md "log.jsonl" and "summary.json"): a View of the
// log (its identity and size when opened, never read past), the read
// loop that confirms an anomaly on a fresh view before calling it
// corruption, the evidence summary.json gives of committed revisions, the
// latest record and its snapshot, the forward scan of a session's whole
// history across archive/ into the log and its rebuild of every
// revision's snapshot (Rebuild), the store's History and Records built on
// them, Export, the decoding of a record into the contract's Record
// (DecodeRecord), what a damaged or missing log is (LogErr, StatLog,
// CheckLog), what a holder checks and sweeps before it writes
// (CheckWritable, SweepSession) and the forensic copy of bytes it cuts
// (SaveForensic), the checks an imported session's records pass on their
// way in (Import), and summary.json's codec and writer.
//
// The log's codec and its sequence rules are internal/record's; logfile
// applies them to the files of one session.
//
//	<session>/
//	  log.jsonl      0600  one record a line (View, Scan)
//	  summary.json   0600  a projection of the latest record, framed (SummaryFile)
//
// It must never append to or cut a log, take a lease, or decide anything
// about the catalog, listings, search or retirement: it reads, classifies
// and reports. The files it writes are summary.json (for the writer that
// holds the lease), forensic copies of bytes a holder is about to cut,
// and an import's records and blobs, into the caller's writers of a
// session not yet published. It imports layout, archive and blobfile (the
// content a record's snapshot references) only.
package logfile
