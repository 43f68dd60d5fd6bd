// Package export owns the bytes of an export (`sessions export`,
// sessionstore.Export): the JSON Lines of a session's revisions, one line
// per revision with its envelope and snapshot, and the latest snapshot
// alone, indented. Every store writes an export through it, so that a
// session exports to the same bytes from every store.
//
//	b = export.AppendLine(b[:0], rev, gen, t, schema, snap)
//	out, err := export.Indent(snap)
//
// It is a leaf: it knows bytes, not stores, so that the contract's own
// fallback and the record codec can both use it.
package export
