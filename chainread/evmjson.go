package chainread

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/sha3"
)

// The JSON-RPC encodings of an EVM node's answers, decoded as strictly as
// go-ethereum's hexutil does: a QUANTITY is "0x" and hex digits without
// leading zeros ("0x0" is zero), DATA is "0x" and an even number of hex
// digits. A JSON null decodes to a nil pointer, that is a missing field.

// evmQuantity is a QUANTITY of at most 256 bits, held big-endian without
// leading zeros (zero is empty), as RLP encodes integers.
type evmQuantity []byte

func (q *evmQuantity) UnmarshalJSON(b []byte) error {
	s, err := hexString(b)
	if err != nil {
		return err
	}
	switch {
	case s == "":
		return errors.New(`quantity "0x" has no digits`)
	case len(s) > 1 && s[0] == '0':
		return fmt.Errorf("quantity 0x%s has leading zeros", s)
	case len(s) > 64:
		return fmt.Errorf("quantity 0x%s is larger than 256 bits", s)
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("quantity 0x%s: %w", s, err)
	}
	*q = rlpTrimZeros(v)
	return nil
}

// uint64 is q if it fits.
func (q evmQuantity) uint64() (uint64, bool) {
	if len(q) > 8 {
		return 0, false
	}
	var x uint64
	for _, c := range q {
		x = x<<8 | uint64(c)
	}
	return x, true
}

func (q evmQuantity) String() string {
	if len(q) == 0 {
		return "0x0"
	}
	return "0x" + strings.TrimPrefix(hex.EncodeToString(q), "0")
}

// evmUint is a QUANTITY that fits 64 bits.
type evmUint uint64

func (u *evmUint) UnmarshalJSON(b []byte) error {
	var q evmQuantity
	if err := q.UnmarshalJSON(b); err != nil {
		return err
	}
	x, ok := q.uint64()
	if !ok {
		return fmt.Errorf("quantity %s is larger than 64 bits", q)
	}
	*u = evmUint(x)
	return nil
}

// evmBytes is DATA of any length.
type evmBytes []byte

func (d *evmBytes) UnmarshalJSON(b []byte) error {
	s, err := hexString(b)
	if err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("data 0x%.16s…: %w", s, err)
	}
	*d = v
	return nil
}

// evmWord is 32 bytes of DATA: a hash or a root.
type evmWord [32]byte

func (w *evmWord) UnmarshalJSON(b []byte) error { return fixedData(w[:], b) }

// evmAddr is 20 bytes of DATA: an address.
type evmAddr [20]byte

func (a *evmAddr) UnmarshalJSON(b []byte) error { return fixedData(a[:], b) }

func fixedData(dst, b []byte) error {
	var d evmBytes
	if err := d.UnmarshalJSON(b); err != nil {
		return err
	}
	if len(d) != len(dst) {
		return fmt.Errorf("data of %d bytes where %d are due", len(d), len(dst))
	}
	copy(dst, d)
	return nil
}

// hexString is the hex digits of the JSON string b, which must begin "0x".
func hexString(b []byte) (string, error) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("not a hex string: %s", bytes.TrimSpace(b))
	}
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return "", fmt.Errorf("hex string %q lacks its 0x prefix", s)
	}
	return s[2:], nil
}

// evmNull says whether a result is JSON null (or absent).
func keccak256(parts ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// hex0x is b as geth prints hashes: 0x and lowercase hex.
func hex0x(b []byte) string { return "0x" + hex.EncodeToString(b) }
