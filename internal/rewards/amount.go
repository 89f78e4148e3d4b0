// Package rewards is the pure reward calculus of an epoch: canonical inputs,
// the integer split of a pool by usage with a conservation check, and the
// canonical payout lines the run's commitment is built over. It does no I/O.
package rewards

import (
	"errors"
	"math/big"
	"math/bits"
	"strconv"
)

// Amount is a non-negative integer below 2^128 (a pool, a payout, a sum of
// units), held in two machine words so that a million accounts are split
// without an allocation each.
type Amount struct{ Hi, Lo uint64 }

// MaxPool is the largest pool an epoch may split: 2^127 minor units.
var MaxPool = Amount{Hi: 1 << 63}

// ErrAmount is returned for text that is not a decimal integer below 2^128.
var ErrAmount = errors.New("not a non-negative decimal integer below 2^128")

// ParseAmount reads a decimal integer ("0", "00042", "170141183460469231731687303715884105728").
// Signs, spaces, exponents and fractions are refused.
func ParseAmount(s string) (Amount, error) {
	if s == "" || len(s) > 80 {
		return Amount{}, ErrAmount
	}
	var a Amount
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return Amount{}, ErrAmount
		}
		hi, lo := bits.Mul64(a.Lo, 10)
		hiHi, hiLo := bits.Mul64(a.Hi, 10)
		if hiHi != 0 {
			return Amount{}, ErrAmount
		}
		hi, c := bits.Add64(hi, hiLo, 0)
		if c != 0 {
			return Amount{}, ErrAmount
		}
		lo, c = bits.Add64(lo, uint64(d), 0)
		hi, c = bits.Add64(hi, 0, c)
		if c != 0 {
			return Amount{}, ErrAmount
		}
		a = Amount{hi, lo}
	}
	return a, nil
}

// AmountOf returns u as an Amount.
func AmountOf(u uint64) Amount { return Amount{Lo: u} }

// IsZero reports whether a is 0.
func (a Amount) IsZero() bool { return a.Hi == 0 && a.Lo == 0 }

// Cmp returns -1, 0 or +1 as a is below, equal to or above b.
func (a Amount) Cmp(b Amount) int {
	switch {
	case a.Hi < b.Hi:
		return -1
	case a.Hi > b.Hi:
		return 1
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// Add returns a+b and whether the sum overflowed 128 bits.
func (a Amount) Add(b Amount) (Amount, bool) {
	lo, c := bits.Add64(a.Lo, b.Lo, 0)
	hi, c := bits.Add64(a.Hi, b.Hi, c)
	return Amount{hi, lo}, c != 0
}

// Sub returns a-b; the caller guarantees b <= a.
func (a Amount) Sub(b Amount) Amount {
	lo, borrow := bits.Sub64(a.Lo, b.Lo, 0)
	hi, _ := bits.Sub64(a.Hi, b.Hi, borrow)
	return Amount{hi, lo}
}

// Big returns a as a big.Int (for tests and the rare wide division).
func (a Amount) Big() *big.Int {
	z := new(big.Int).SetUint64(a.Hi)
	z.Lsh(z, 64)
	return z.Or(z, new(big.Int).SetUint64(a.Lo))
}

const pow19 = 10_000_000_000_000_000_000 // 10^19, the largest power of ten in a word

// String is the decimal form, without leading zeros.
func (a Amount) String() string {
	return string(a.AppendDecimal(nil))
}

// AppendDecimal appends the decimal form of a to b.
func (a Amount) AppendDecimal(b []byte) []byte {
	if a.Hi == 0 {
		return strconv.AppendUint(b, a.Lo, 10)
	}
	// a = q·10^19 + r with q < 2^65; q itself splits once more.
	qHi, r := a.Hi/pow19, a.Hi%pow19
	qLo, low := bits.Div64(r, a.Lo, pow19)
	b = Amount{qHi, qLo}.AppendDecimal(b)
	var digits [19]byte
	for i := 18; i >= 0; i-- {
		digits[i] = byte('0' + low%10)
		low /= 10
	}
	return append(b, digits[:]...)
}
