package chainread

// RLP, as the Ethereum yellow paper (appendix B) defines it, only as far as
// rebuilding a transaction or a block header needs: encoding byte strings,
// big-endian integers and lists of already encoded items.

// rlpString encodes b as an RLP byte string.
func rlpString(b []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return []byte{b[0]}
	}
	return append(rlpHead(0x80, len(b)), b...)
}

// rlpList encodes the already encoded items as an RLP list.
func rlpList(items ...[]byte) []byte {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	out := rlpHead(0xc0, n)
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// rlpUint encodes x as an RLP integer: big-endian, without leading zeros,
// zero being the empty string.
func rlpUint(x uint64) []byte {
	return rlpString(rlpTrimZeros(rlpBigEndian(x)))
}

// rlpInt encodes the big-endian integer b as an RLP integer, dropping its
// leading zeros.
func rlpInt(b []byte) []byte {
	return rlpString(rlpTrimZeros(b))
}

// rlpHead is the prefix of a string (base 0x80) or list (base 0xc0) whose
// payload is n bytes long.
func rlpHead(base byte, n int) []byte {
	if n < 56 {
		return []byte{base + byte(n)}
	}
	size := rlpTrimZeros(rlpBigEndian(uint64(n)))
	return append([]byte{base + 55 + byte(len(size))}, size...)
}

func rlpBigEndian(x uint64) []byte {
	return []byte{byte(x >> 56), byte(x >> 48), byte(x >> 40), byte(x >> 32), byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}
}

func rlpTrimZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}
