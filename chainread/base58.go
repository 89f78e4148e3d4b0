package chainread

import (
	"errors"
	"fmt"
	"strings"
)

// base58Alphabet is Bitcoin's, which Solana spells keys, signatures and
// hashes in.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Digit maps a character to its value, -1 for any other.
var base58Digit = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i := range len(base58Alphabet) {
		d[base58Alphabet[i]] = int8(i)
	}
	return d
}()

// Base58Encode spells b in base58 (Bitcoin alphabet): one '1' for each
// leading zero byte, then the rest as a big-endian number.
func Base58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// Digits, least significant first; log(256)/log(58) < 1.37.
	digits := make([]byte, 0, (len(b)-zeros)*137/100+1)
	for _, x := range b[zeros:] {
		carry := int(x)
		for i := range digits {
			carry += int(digits[i]) << 8
			digits[i] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append(digits, byte(carry%58))
			carry /= 58
		}
	}
	var s strings.Builder
	s.Grow(zeros + len(digits))
	for range zeros {
		s.WriteByte('1')
	}
	for i := len(digits) - 1; i >= 0; i-- {
		s.WriteByte(base58Alphabet[digits[i]])
	}
	return s.String()
}

// errBase58Empty is the refusal of an empty string, which spells no key,
// signature or hash.
var errBase58Empty = errors.New("base58: empty string")

// Base58Decode reads s as base58 (Bitcoin alphabet), strictly: any
// character outside the alphabet, space included, is refused, and so is
// the empty string. Every byte string has exactly one spelling, so
// Base58Encode(Base58Decode(s)) == s whenever it decodes.
func Base58Decode(s string) ([]byte, error) {
	if s == "" {
		return nil, errBase58Empty
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	// Bytes, least significant first; log(58)/log(256) < 0.74.
	num := make([]byte, 0, (len(s)-zeros)*74/100+1)
	for i := zeros; i < len(s); i++ {
		d := base58Digit[s[i]]
		if d < 0 {
			return nil, fmt.Errorf("base58: invalid character %q at %d", s[i], i)
		}
		carry := int(d)
		for j := range num {
			carry += int(num[j]) * 58
			num[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			num = append(num, byte(carry))
			carry >>= 8
		}
	}
	out := make([]byte, zeros+len(num))
	for i, x := range num {
		out[len(out)-1-i] = x
	}
	return out, nil
}

// base58Fixed decodes s as base58 of exactly n bytes.
func base58Fixed(s string, n int) ([]byte, error) {
	b, err := Base58Decode(s)
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("base58: %d bytes, want %d", len(b), n)
	}
	return b, nil
}
