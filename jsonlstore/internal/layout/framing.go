package layout

import (
	"encoding/json"

	"github.com/sessionstore/sessionstore/internal/record"
)

// Small JSON files of the store (summary.json, archive/manifest.json) are
// framed like log records (record.Frame): the JSON object's last key is
// "crc", the CRC-32C of every byte before `,"crc":"`, so a torn or damaged
// file is recognised and never trusted. Trailing spaces and newlines are
// allowed (padding over longer previous content).

// UnframeJSON verifies b's checksum and unmarshals it into v.
func UnframeJSON(b []byte, v any) bool {
	b, ok := record.Unframe(b)
	return ok && json.Unmarshal(b, v) == nil
}
