package record

// CRC-32C of a concatenation from the checksums of its parts. A snapshot
// rebuilt from pieces (a delta chain, a writer's cached encodings) is
// checked without writing it out: the checksum of A‖B is a function of
// crc(A), crc(B) and len(B). In the reflected bit order hash/crc32 uses, a
// CRC register is a polynomial over GF(2); appending n zero bytes to A
// multiplies its register by x^(8n) modulo the CRC's polynomial, and the
// register of B's bytes adds (xors) to that. Multiplying by x^(8n) takes
// one product per set bit of n, from a table of x^(2^k).

// castagnoliReversed is the Castagnoli polynomial in reflected bit order.
const castagnoliReversed = 0x82f63b78

// x2k[k] is x^(2^k) modulo the polynomial, in reflected bit order.
var x2k = func() (t [64]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = mulMod(p, p)
	}
	return t
}()

// mulMod returns a·b modulo the polynomial (reflected: bit 31 is x^0).
func mulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// CRCCombine returns the CRC-32C of A‖B from crcA = CRC-32C(A), crcB =
// CRC-32C(B) and lenB = len(B). Its cost is logarithmic in lenB.
func CRCCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return mulMod(crcShift(lenB), crcA) ^ crcB
}

// crcShift returns x^(8·n) modulo the polynomial, the factor by which
// CRCCombine multiplies crcA for a B of n > 0 bytes: one product per set
// bit of n. A part whose length does not change keeps it (member).
func crcShift(n int64) uint32 {
	// The bits of n, shifted by 3 (8 = 2^3).
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; k++ {
		if n&1 != 0 {
			p = mulMod(x2k[k&63], p)
		}
		n >>= 1
	}
	return p
}
