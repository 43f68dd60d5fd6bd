package record

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCRCCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4096, 1 << 16, 1<<16 + 3, 1 << 20}
	for _, la := range lengths {
		for _, lb := range lengths {
			a, b := make([]byte, la), make([]byte, lb)
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			want := crc32.Checksum(append(append([]byte(nil), a...), b...), Castagnoli)
			got := CRCCombine(crc32.Checksum(a, Castagnoli), crc32.Checksum(b, Castagnoli), int64(lb))
			require.Equal(t, want, got, "len(A)=%d len(B)=%d", la, lb)
		}
	}
}

func TestCRCCombineMany(t *testing.T) {
	// A long concatenation folded piece by piece, as a rebuilt snapshot is.
	r := rand.New(rand.NewPCG(3, 4))
	var all []byte
	var crc uint32
	for range 500 {
		p := make([]byte, r.IntN(300))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		all = append(all, p...)
		crc = CRCCombine(crc, crc32.Checksum(p, Castagnoli), int64(len(p)))
		require.Equal(t, crc32.Checksum(all, Castagnoli), crc)
	}
}

func BenchmarkCRCCombine(b *testing.B) {
	for b.Loop() {
		_ = CRCCombine(0x12345678, 0x9abcdef0, 12<<20+12345)
	}
}
