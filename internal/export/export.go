package export

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// AppendLine appends the export line of a revision whose snapshot
// encoding is snap, and its newline, to b. Its keys come in this order
// (sessionstore.ExportLine reads it back):
//
//	{"revision":1,"generation":1,"time":"2026-11-29T12:00:01Z","schema":1,"snapshot":{…}}
func AppendLine(b []byte, rev, gen uint64, t time.Time, schema int, snap []byte) []byte {
	b = append(b, `{"revision":`...)
	b = strconv.AppendUint(b, rev, 10)
	b = append(b, `,"generation":`...)
	b = strconv.AppendUint(b, gen, 10)
	b = append(b, `,"time":"`...)
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","schema":`...)
	b = strconv.AppendInt(b, int64(schema), 10)
	b = append(b, `,"snapshot":`...)
	b = append(b, snap...)
	return append(b, "}\n"...)
}

// Indent returns a snapshot's encoding as an export of the latest
// revision writes it: indented JSON and a newline, the stored bytes
// otherwise unchanged (a newer schema's unknown keys included).
func Indent(snap []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, snap, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
