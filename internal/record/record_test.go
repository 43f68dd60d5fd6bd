package record

import (
	"bytes"
	"errors"
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
	full.Version = Version + 1
	_, _, err = Parse(bytes.TrimSuffix(Encode(full, []byte(`{}`)), []byte("\n")), 1<<20)
	require.ErrorIs(t, err, ErrNewer)
}

func TestParseNewer(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	line := func(m Meta, payload string) []byte {
		return bytes.TrimSuffix(Encode(m, []byte(payload)), []byte("\n"))
	}
	tests := []struct {
		name    string
		line    []byte
		wantErr error
		wantRev uint64
	}{
		{"a newer format version", line(Meta{Version: Version + 1, Schema: 1, Rev: 2, Gen: 1, Time: at, Kind: KindFull}, `{}`), ErrNewer, 2},
		{"an unknown kind", line(Meta{Version: Version2, Schema: 1, Rev: 3, Gen: 1, Time: at, Kind: "patch"}, `{}`), ErrNewer, 3},
		{"a newer layout", AppendCRC([]byte(`{"v":9,"layout":"other"`)), ErrNewer, 0},
		{"a newer layout keeping the prefix", AppendCRC([]byte(`{"v":9,"schema":4,"rev":7,"other":1`)), ErrNewer, 7},
		{"a bad checksum is not newer", append(line(Meta{Version: Version + 1, Schema: 1, Rev: 2, Gen: 1, Time: at, Kind: KindFull}, `{}`)[:40], `x"}`...), ErrFraming, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, err := Parse(tt.line, 1<<20)
			require.ErrorIs(t, err, tt.wantErr)
			if errors.Is(tt.wantErr, ErrNewer) {
				require.Equal(t, tt.wantRev, m.Rev)
			}
		})
	}
}

func TestParseGap(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := Meta{Version: VersionOf(KindGap), Schema: 1, Rev: 15, Gen: 4, Time: at, Kind: KindGap}
	payload := EncodeGap(Gap{Last: 17, Reason: "damaged", Forensic: "s/forensic/repair-1.bin"})
	got, p, err := Parse(bytes.TrimSuffix(Encode(m, payload), []byte("\n")), 1<<20)
	require.NoError(t, err)
	require.Equal(t, uint64(17), got.Last)
	require.Equal(t, uint64(17), got.Through())
	require.Equal(t, payload, p)

	// A gap must end at or after its own revision, and is format 3 only.
	bad := EncodeGap(Gap{Last: 14, Reason: "x"})
	_, _, err = Parse(bytes.TrimSuffix(Encode(m, bad), []byte("\n")), 1<<20)
	require.ErrorIs(t, err, ErrFraming)
	m.Version = Version2
	_, _, err = Parse(bytes.TrimSuffix(Encode(m, payload), []byte("\n")), 1<<20)
	require.ErrorIs(t, err, ErrFraming)
}

func TestParseCRLF(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	l := bytes.TrimSuffix(Encode(Meta{Version: 1, Schema: 1, Rev: 1, Gen: 1, Time: at, Kind: KindFull}, []byte(`{}`)), []byte("\n"))
	_, _, err := Parse(append(l, '\r'), 1<<20)
	require.ErrorIs(t, err, ErrCRLF)
	_, _, err = Parse(append(l[:len(l)-3], '\r'), 1<<20)
	require.NotErrorIs(t, err, ErrCRLF)
}
