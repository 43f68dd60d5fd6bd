// Package catalogfile owns a store's catalog (FORMAT.md "The listing
// catalog: .catalog/"): how the catalog file is built and rewritten
// (build.go), the holders' marks (marks.go), what a reader may believe of
// a catalog and what it needs after (vouch.go, the trust rules), and the
// check of a catalog against the logs (verify.go), and the catalog's word
// on the logs for the search index (search.go). The bytes of its files
// are package catalog's (internal/catalog, the codec); this package says
// what the store trusts of them, and why that is sound.
//
//	ROOT/.catalog/
//	  catalog             every session's summary (Path), written by Write
//	  root                the root directory's state vouched for (RootPath)
//	  lock                taken by the one writer of the catalog
//	  marks/<id>.<gen>    a holder's mark, made before its log changes (Mark)
//	  marks/.mark         the empty file every mark is a link to (MarkSource)
//
// The catalog: ROOT/.catalog/catalog holds every session's summary, so
// that a fresh process lists the first page of ten thousand sessions from
// one file instead of ten thousand summary.json files. It is a cache. The
// logs stay the only truth, nothing but the catalog is ever computed from
// it, and a listing that cannot trust it reads the sessions themselves
// (package listing's scan), so a session on disk is listed whatever state
// the catalog is in.
//
// What a catalog C claims, and how each claim is kept true:
//
//   - An entry describes its session's log as it is on disk (identity,
//     size and modification time, the rule summary.json follows) unless
//     the session has a mark. A log changes only under its lease, and a
//     holder makes a mark, .catalog/marks/<id>.<generation>, durable
//     before it changes the log under that generation: at once after
//     taking the lease (before recovery may cut a torn tail), and it
//     checks that the mark is still there before every append
//     (marks.go). A mark goes only when a catalog that accounts
//     for the session after that generation ended is durable: its writer
//     saw the lease free (or stale) before it read the session
//     (build.go). So a session without a mark has not changed
//     since its entry was made, and a listing believes the entries of
//     sessions it does not list without looking at them.
//   - Its entries are exactly the sessions under the root while the root
//     directory looks as the root file (.catalog/root) says it did when
//     someone compared the two, provided that look came SettleTime after
//     the directory's last change (catalog.Settled): every creation and
//     deletion renames an entry of the root, which gives it a new ctime.
//     The root file is believed only while the root's link count says it
//     holds no other subdirectories than the catalog's sessions and the
//     store's own (SubdirsAccounted): a root file can be forged, the
//     link count cannot. Otherwise a listing reads the root's names,
//     which costs a few milliseconds for ten thousand sessions.
//   - The marks it relies on are in the directory it was written against
//     (its identity is in the header): a marks directory deleted and made
//     again, or one its owner may not write to, voids the catalog.
//
// Every entry a listing returns is also proved current by a stat of its
// log; one that fails the proof without a mark means that a log changed
// behind the protocol's back (by a program that predates the catalog, or
// by hand), and the listing distrusts the whole catalog: it scans, and the
// catalog is rebuilt. A search believes the catalog in the same way (the
// facade's search host, through Vouch): the entries stand in for a stat
// of each log, and the logs of the sessions its hits come from are probed.
//
// Who writes what: holders write only their marks (never the catalog, so
// that an append is never held up by it); a listing or a search that
// finds the catalog missing, damaged, behind the root's sessions or short
// of many marks rewrites it (Keep), if it can take .catalog/lock at once
// (else it goes on without), and refreshes the root file; Reindex rebuilds
// it. None of it is a reader modifying session data: the catalog is no
// session's.
//
// It must never write a session's files, take a session's lease or decide
// how a listing is served (package listing does): what it needs of the
// store — lease status, the catalog lock's file lock, whether the store is
// closed — comes through Host, and it never imports the jsonlstore facade.
// It imports layout, logfile and the catalog codec.
package catalogfile
