// Package adapter holds what the adapters (memstore, jsonlstore, pgstore)
// do the same way and a user of a store never calls: the defaults of the
// options they share and the readiness check every call begins with, the
// check a snapshot passes before any adapter writes it, the first
// revision of a fork, revision 0 of LoadRevision, and the way a search query is parsed, becomes the
// index's filter, and a hit of the full-text index becomes the contract's
// SearchHit. The contract itself (Store, Writer,
// their types and errors) is the root package's; this package only
// serves it, so that the root's API is what a user meets.
//
//	payload, err := adapter.EncodeSnapshot(id, snap, maxRecordBytes)
//	snap := adapter.ForkSnapshot(src.Snapshot, newID)
//	q, fq, err := adapter.ReadySearch(s.ready(ctx), q)
//	hit := adapter.SearchHit(h)
//	adapter.Defaults(&o.MaxRecordBytes, &o.BlobThreshold, &o.Now, &o.Redactor)
//
// It must never hold state or do I/O: each function is a rule stated
// once, for every adapter.
package adapter
