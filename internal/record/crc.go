package record

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
)

// Castagnoli is the CRC-32C table of every checksum in the format.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	crcKey = `,"crc":"`
	// crcSuffixLen is the length of `,"crc":"xxxxxxxx"}`.
	crcSuffixLen = len(crcKey) + 8 + len(`"}`)
)

// AppendCRC closes the JSON object b (which lacks its closing brace) with
// its checksum: `,"crc":"xxxxxxxx"}`, the CRC-32C of every byte of b.
func AppendCRC(b []byte) []byte {
	sum := crc32.Checksum(b, Castagnoli)
	b = append(b, crcKey...)
	b = appendHex8(b, sum)
	return append(b, `"}`...)
}

// SplitCRC checks the checksum suffix that AppendCRC adds and returns the
// bytes it covers. ok is false when the suffix is malformed (body is then
// nil) or the checksum does not match (body is then the covered bytes).
func SplitCRC(b []byte) (body []byte, ok bool) {
	if len(b) < crcSuffixLen {
		return nil, false
	}
	body, suffix := b[:len(b)-crcSuffixLen], b[len(b)-crcSuffixLen:]
	if !bytes.HasPrefix(suffix, []byte(crcKey)) || !bytes.HasSuffix(suffix, []byte(`"}`)) {
		return nil, false
	}
	want, ok := parseHex8(suffix[len(crcKey) : len(crcKey)+8])
	if !ok {
		return nil, false
	}
	return body, crc32.Checksum(body, Castagnoli) == want
}

// Frame marshals v (a struct, so a JSON object) and appends its checksum
// as the object's last key, "crc". Small files (summaries, manifests) are
// framed this way so a torn or damaged one is recognised, never trusted.
func Frame(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return AppendCRC(b[:len(b)-1]), nil // the checksum replaces the closing brace
}

// Unframe verifies a framed file's checksum, ignoring trailing spaces and
// newlines (padding over longer previous content), and returns the framed
// object's bytes, ready to unmarshal.
func Unframe(b []byte) ([]byte, bool) {
	b = bytes.TrimRight(b, " \n")
	if _, ok := SplitCRC(b); !ok {
		return nil, false
	}
	return b, true
}

// appendHex8 appends v as the eight lower-case hex digits every checksum
// of the format is written as.
func appendHex8(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[(v>>uint(shift))&0xf])
	}
	return b
}

// parseHex8 reads the checksum appendHex8 writes: exactly eight lower-case
// hex digits.
func parseHex8(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, len(b) == 8
}
