package jsonlstore

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/stretchr/testify/require"
)

var recTime = time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)

func testLine(rev uint64, payload string) []byte {
	return record.Encode(record.Meta{Version: record.Version4, Schema: 1, Rev: rev, Gen: 3, Time: recTime, Kind: record.KindFull}, []byte(payload))
}

func TestRecordRoundTrip(t *testing.T) {
	payload := `{"id":"s1","text":"a \"quoted\" ✓ line"}`
	line := testLine(12, payload)
	require.Equal(t, byte('\n'), line[len(line)-1])
	require.Equal(t, 1, bytes.Count(line, []byte("\n")), "one line")
	require.True(t, json.Valid(line[:len(line)-1]), "the line is a JSON object jq can read")
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &obj))
	require.JSONEq(t, payload, string(obj["snap"]))

	r, err := parseLine(line[:len(line)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, uint64(12), r.Rev)
	require.Equal(t, uint64(3), r.Gen)
	require.Equal(t, 1, r.Schema)
	require.Equal(t, record.KindFull, r.Kind)
	require.True(t, recTime.Equal(r.Time))
	require.Equal(t, payload, string(r.Payload))
}

func TestRecordEveryByteFlipIsDetected(t *testing.T) {
	line := testLine(7, `{"id":"s1","n":1}`)
	body := line[:len(line)-1]
	for i := range body {
		for _, bit := range []byte{0x01, 0x10, 0x80} {
			c := bytes.Clone(body)
			c[i] ^= bit
			_, err := parseLine(c, 1<<20)
			require.Error(t, err, "flip of bit %#x at byte %d (%q) not detected", bit, i, body[i])
		}
	}
}

func TestRecordStrictness(t *testing.T) {
	good := testLine(1, `{"id":"x"}`)
	body := string(good[:len(good)-1])
	tests := []struct {
		name string
		line string
	}{
		{"empty", ""},
		{"crlf", body + "\r"},
		{"bom", "\ufeff" + body},
		{"leading space", " " + body},
		{"truncated", body[:len(body)-5]},
		{"nul", string(make([]byte, 40))},
		{"json but not ours", `{"rev":1,"snap":{}}`},
		{"upper-case hex", body[:len(body)-10] + "ABCDEFAB\"}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLine([]byte(tt.line), 1<<20)
			require.Error(t, err)
		})
	}
	t.Run("payload over cap", func(t *testing.T) {
		big := testLine(1, `{"id":"`+string(bytes.Repeat([]byte("a"), 100))+`"}`)
		_, err := parseLine(big[:len(big)-1], 50)
		require.ErrorIs(t, err, record.ErrTooLong)
	})
	t.Run("length mismatch with valid crc", func(t *testing.T) {
		// Forge a line whose len field lies but whose CRC is right.
		b := []byte(`{"v":1,"schema":1,"rev":1,"gen":1,"time":"2026-11-29T12:00:00Z","kind":"full","len":3,"snap":{"id":"x"}`)
		line := record.AppendCRC(bytes.Clone(b))
		_, err := parseLine(line, 1<<20)
		require.ErrorIs(t, err, record.ErrFraming)
	})
}

func TestPeekRev(t *testing.T) {
	line := testLine(42, `{"id":"x"}`)
	line[len(line)-5] ^= 1 // damage the crc, keep the envelope
	rev, ok := record.PeekRev(line)
	require.True(t, ok)
	require.Equal(t, uint64(42), rev)
	_, ok = record.PeekRev([]byte("\x00\x00\x00"))
	require.False(t, ok)
}

// FuzzParseLine: parsing never panics, never accepts a line that does not
// re-encode to itself, and never returns a payload beyond the cap.
func FuzzParseLine(f *testing.F) {
	f.Add(testLine(1, `{"id":"x"}`))
	f.Add(testLine(99, `{"id":"y","messages":[]}`))
	f.Add([]byte(`{"v":1,"schema":1,"rev":1}`))
	f.Add([]byte{0, 0, 0, '\n'})
	// Every line of every committed fixture log: valid records, and the
	// torn, flipped, CRLF and BOM lines of the damaged fixtures.
	_, logs := fixtureLogs(f)
	for _, log := range logs {
		for _, l := range bytes.SplitAfter(log, []byte("\n")) {
			if len(l) > 0 {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSuffix(data, []byte("\n"))
		r, err := parseLine(data, 4096)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(r.Payload), 4096)
		again := record.Encode(r.Meta, r.Payload)
		require.Equal(t, string(data), string(again[:len(again)-1]), "an accepted line re-encodes to itself")
	})
}
