// Package idemkey reads and writes the Idempotency-Key request header of the
// IETF httpapi draft (draft-ietf-httpapi-idempotency-key-header), whose value
// is a Structured Field string (RFC 8941, section 3.3.3): the key in double
// quotes, with " and \ escaped by a backslash. It imports nothing of
// keeper's, so the Go client, the API and the built-in ledger share it.
package idemkey

import (
	"errors"
	"strings"
)

// Header is the request header's name.
const Header = "Idempotency-Key"

// Format is key as the header's value: a Structured Field string when the
// key is printable ASCII, which is all such a string can hold; any other key
// bare, as servers written before the draft read it (keeper's read both).
func Format(key string) string {
	if !sfPrintable(key) {
		return key
	}
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}

// ErrMalformed is Parse's refusal of a value that starts as a Structured
// Field string but is not one.
var ErrMalformed = errors.New(`a quoted Idempotency-Key must be one Structured Field string (RFC 8941): printable ASCII between double quotes, with " and \ escaped as \" and \\, and nothing after it`)

// Parse reads the header's value: a Structured Field string (the draft's
// form, starting with a double quote), or the bare key. The string is read
// strictly, as RFC 8941 parses an sf-string item without parameters; the
// bare form is taken as it is. The key's length and characters are the
// caller's to check.
func Parse(v string) (string, error) {
	s := strings.Trim(v, " ")
	if !strings.HasPrefix(s, `"`) {
		return v, nil
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i == len(s) || s[i] != '"' && s[i] != '\\' {
				return "", ErrMalformed
			}
			b.WriteByte(s[i])
		case c == '"':
			if i != len(s)-1 {
				return "", ErrMalformed
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", ErrMalformed
		default:
			b.WriteByte(c)
		}
	}
	return "", ErrMalformed // no closing quote
}

// sfPrintable reports whether s is all characters an sf-string holds.
func sfPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
