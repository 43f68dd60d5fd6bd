// Package listing is the one place that chooses how a directory store's
// listing is served (Lister.List), and serves it. There are three routes,
// tried in this order, each costing in proportion to the number of
// sessions and the page, never to the length of histories:
//
//   - Indexed (listing.go), when the watcher runs: once it confirms that
//     its index holds every change made before the call
//     (watch.Watcher.Current), the page is selected from memory; only its
//     items' lease status is read.
//   - the catalog (catalog.go), when the catalog can be believed
//     (catalogfile.Catalog.Vouch): the page is selected from
//     .catalog/catalog, one file, and every entry it returns is proved
//     current by an lstat of its log.
//   - Scan (scan.go) otherwise: each session's summary.json is read and
//     checked against a stat of its log, but only the fields a filter or
//     an order needs are decoded; the page is selected from those, and
//     only its items are then read in full and checked as logfile.Current
//     checks them.
//
// After a listing from the catalog or a scan, the catalog's Keep does
// what the listing found the catalog to need (a rewrite, or a root file)
// for the next one; a listing never waits for that. A listing under a
// ReadOnly context (readonly.go) skips it: a dry run writes nothing.
//
// It owns no file. It must never write a session's files, take a lease,
// or decide what the catalog may be trusted with (package catalogfile's
// trust rules do): it reads the sessions, the watcher's index and the
// catalog, and computes lease status through Host, which the store
// passes; it never imports the jsonlstore facade.
package listing
