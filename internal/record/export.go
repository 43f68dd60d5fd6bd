package record

import (
	"strconv"
	"time"
)

// AppendExportLine appends the export line of a revision whose envelope is
// m and whose rebuilt snapshot is snap: the JSON Lines form that
// `sessions export` writes, for programs that do not read the record
// format. Keys in this order, compact, one line:
//
//	{"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{…}}
//
// where snapshot is the sessnap snapshot byte for byte as its writer
// encoded it.
func AppendExportLine(b []byte, m Meta, snap []byte) []byte {
	b = append(b, `{"revision":`...)
	b = strconv.AppendUint(b, m.Rev, 10)
	b = append(b, `,"generation":`...)
	b = strconv.AppendUint(b, m.Gen, 10)
	b = append(b, `,"time":"`...)
	b = m.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","schema":`...)
	b = strconv.AppendInt(b, int64(m.Schema), 10)
	b = append(b, `,"snapshot":`...)
	b = append(b, snap...)
	return append(b, "}\n"...)
}
