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
	const digits = "0123456789abcdef"
	sum := crc32.Checksum(b, Castagnoli)
	b = append(b, crcKey...)
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[(sum>>uint(shift))&0xf])
	}
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
	var want uint32
	for _, c := range suffix[len(crcKey) : len(crcKey)+8] {
		switch {
		case c >= '0' && c <= '9':
			want = want<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			want = want<<4 | uint32(c-'a'+10)
		default:
			return nil, false
		}
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
