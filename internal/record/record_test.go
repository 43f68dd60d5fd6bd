package record

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEncodeParse(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	m := Meta{Version: Version1, Schema: 1, Rev: 12, Gen: 3, Time: at, Kind: KindFull}
	line := Encode(m, []byte(`{"id":"x"}`))
	require.Equal(t, `{"v":1,"schema":1,"rev":12,"gen":3,"time":"2026-11-29T12:00:00.123456789Z","kind":"full","len":10,"snap":{"id":"x"},"crc":"`, string(line[:len(line)-len(`xxxxxxxx"}`)-1]))
	require.Equal(t, byte('\n'), line[len(line)-1])

	got, payload, err := Parse(line[:len(line)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, m, got)
	require.Equal(t, `{"id":"x"}`, string(payload))

	flipped := bytes.Clone(line[:len(line)-1])
	flipped[40] ^= 1
	_, _, err = Parse(flipped, 1<<20)
	require.ErrorIs(t, err, ErrChecksum)

	_, _, err = Parse(line[:len(line)-1], 5)
	require.ErrorIs(t, err, ErrTooLong)

	_, _, err = Parse(line[:len(line)-3], 1<<20)
	require.ErrorIs(t, err, ErrFraming)

	rev, ok := PeekRev(flipped)
	require.True(t, ok)
	require.Equal(t, uint64(12), rev)
}

func TestFrame(t *testing.T) {
	b, err := Frame(struct {
		A int    `json:"a"`
		B string `json:"b"`
	}{1, "two"})
	require.NoError(t, err)
	require.Regexp(t, `^\{"a":1,"b":"two","crc":"[0-9a-f]{8}"\}$`, string(b))

	body, ok := Unframe(append(bytes.Clone(b), "  \n\n"...))
	require.True(t, ok)
	require.Equal(t, b, body)

	damaged := bytes.Clone(b)
	damaged[5] = '2'
	_, ok = Unframe(damaged)
	require.False(t, ok)
	_, ok = Unframe([]byte(`{}`))
	require.False(t, ok)
}

func TestEncodeParseDelta(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := Meta{Version: VersionOf(KindDelta), Schema: 1, Rev: 13, Gen: 3, Time: at, Kind: KindDelta}
	delta := []byte(`{"snap_len":10,"snap_crc":"00000000"}`)
	line := Encode(m, delta)
	require.True(t, bytes.HasPrefix(line, []byte(`{"v":2,"schema":1,"rev":13,"gen":3,"time":"2026-11-29T12:00:00Z","kind":"delta","len":37,"delta":{"snap_len"`)), string(line))
	got, payload, err := Parse(line[:len(line)-1], 1<<20)
	require.NoError(t, err)
	require.Equal(t, m, got)
	require.Equal(t, delta, payload)

	// A delta is valid only in format 2, and a full record reads in both.
	m.Version = Version1
	_, _, err = Parse(bytes.TrimSuffix(Encode(m, delta), []byte("\n")), 1<<20)
	require.ErrorIs(t, err, ErrFraming)
	full := Meta{Version: Version2, Schema: 1, Rev: 1, Gen: 1, Time: at, Kind: KindFull}
	_, _, err = Parse(bytes.TrimSuffix(Encode(full, []byte(`{}`)), []byte("\n")), 1<<20)
	require.NoError(t, err)
	full.Version = 3
	_, _, err = Parse(bytes.TrimSuffix(Encode(full, []byte(`{}`)), []byte("\n")), 1<<20)
	require.ErrorIs(t, err, ErrFraming)
}
