package record

import "github.com/sessionstore/sessionstore"

// AppendExportLine appends the export line of a revision whose envelope is
// m and whose rebuilt snapshot is snap: the JSON Lines form that
// `sessions export` writes (sessionstore.AppendExportLine, whose encoding
// every store shares).
func AppendExportLine(b []byte, m Meta, snap []byte) []byte {
	return sessionstore.AppendExportLine(b, m.Rev, m.Gen, m.Time, m.Schema, snap)
}
