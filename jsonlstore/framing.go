package jsonlstore

import (
	"bytes"
	"encoding/json"
)

// Small JSON files of the store (summary.json, archive/manifest.json) are
// framed like log records: the JSON object's last key is "crc", the
// CRC-32C of every byte before `,"crc":"`, so a torn or damaged file is
// recognised and never trusted. Trailing spaces and newlines are allowed
// (padding over longer previous content).

// frameJSON marshals v (a struct, so an object) and appends its checksum.
func frameJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // drop the closing brace; the checksum goes last
	sum := crc(b)
	b = append(b, crcKey...)
	b = appendHex32(b, sum)
	return append(b, `"}`...), nil
}

// unframeJSON verifies b's checksum and unmarshals it into v.
func unframeJSON(b []byte, v any) bool {
	b = bytes.TrimRight(b, " \n")
	if len(b) < crcSuffixSz {
		return false
	}
	body, suffix := b[:len(b)-crcSuffixSz], b[len(b)-crcSuffixSz:]
	if !bytes.HasPrefix(suffix, []byte(crcKey)) || !bytes.HasSuffix(suffix, []byte(`"}`)) {
		return false
	}
	want, ok := parseHex32(suffix[len(crcKey) : len(crcKey)+8])
	if !ok || crc(body) != want {
		return false
	}
	return json.Unmarshal(b, v) == nil
}
