package rewards

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Usage is one account's usage as clients and accounting services send it:
// {"account": "alice", "units": "1200"}.
type Usage struct {
	Account string `json:"account"`
	Units   string `json:"units"`
}

// Entry is one account of sealed inputs.
type Entry struct {
	Account string
	Units   uint64
}

// Inputs are an epoch's sealed inputs: the pool and the accounts' usage,
// sorted by account.
type Inputs struct {
	Pool    Amount
	Entries []Entry
}

// Limits on what an epoch accepts.
const (
	MaxAccountLen = 128
	MaxAccounts   = 10_000_000
	maxUnitsLen   = 40
)

// ValidAccount reports whether s can name an account: 1–128 printable ASCII
// characters without spaces. Accounts appear in payout lines ("<account>
// <amount>") and in ledger idempotency keys, so nothing else is allowed.
func ValidAccount(s string) bool {
	if s == "" || len(s) > MaxAccountLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// UsageError names the entry of a usage list a client must fix.
type UsageError struct {
	Index   int    // position in the list as sent; -1 for the list itself
	Field   string // "account" or "units"; "" for the list
	Code    string // invalid_account, invalid_units, duplicate_account, empty_usage, too_many_accounts
	Message string
}

func (e *UsageError) Error() string {
	if e.Index < 0 {
		return e.Message
	}
	return fmt.Sprintf("usage[%d].%s: %s", e.Index, e.Field, e.Message)
}

// CheckUsage applies the rules a client's inline usage must meet before
// keeper accepts an epoch: at least one account, valid account names, no
// account twice, and units that are positive integers up to 2^64−1.
func CheckUsage(usage []Usage) *UsageError {
	if len(usage) == 0 {
		return &UsageError{Index: -1, Code: "empty_usage", Message: "usage must list at least one account"}
	}
	if len(usage) > MaxAccounts {
		return &UsageError{Index: -1, Code: "too_many_accounts", Message: fmt.Sprintf("usage lists more than %d accounts", MaxAccounts)}
	}
	seen := make(map[string]int, len(usage))
	for i, u := range usage {
		if !ValidAccount(u.Account) {
			return &UsageError{Index: i, Field: "account", Code: "invalid_account", Message: fmt.Sprintf("account must be 1–%d printable ASCII characters without spaces", MaxAccountLen)}
		}
		if first, dup := seen[u.Account]; dup {
			return &UsageError{Index: i, Field: "account", Code: "duplicate_account", Message: fmt.Sprintf("account %q is already listed at usage[%d]", u.Account, first)}
		}
		seen[u.Account] = i
		n, err := parseUnits(u.Units)
		if err != nil || n <= 0 {
			return &UsageError{Index: i, Field: "units", Code: "invalid_units", Message: "units must be a positive integer up to 18446744073709551615, as a decimal string"}
		}
	}
	return nil
}

// parseUnits reads a decimal integer string that may carry a leading '-'; it
// returns an int-ish signed view good enough for the checks: negative, zero
// or positive (values above 2^64−1 are an error).
func parseUnits(s string) (int, error) {
	canon, ok := canonicalInteger(s)
	if !ok {
		return 0, fmt.Errorf("units %q are not an integer", s)
	}
	if canon[0] == '-' {
		return -1, nil
	}
	if _, err := strconv.ParseUint(canon, 10, 64); err != nil {
		return 0, fmt.Errorf("units %s exceed 2^64−1", canon)
	}
	if canon == "0" {
		return 0, nil
	}
	return 1, nil
}

// canonicalInteger normalises a decimal integer string: an optional '-',
// digits, leading zeros dropped, "-0" becomes "0".
func canonicalInteger(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > maxUnitsLen {
		return "", false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", false
		}
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", true
	}
	if neg {
		return "-" + digits, true
	}
	return digits, true
}

// sealedHeader opens every sealed inputs file; the format is versioned so a
// later change cannot silently alter what an old hash stood for.
const sealedHeader = "keeper-rewards-inputs v1\n"

// Seal canonicalises an epoch's inputs (usage sorted by account, integers
// without leading zeros) into the bytes whose SHA-256 names them:
//
//	keeper-rewards-inputs v1
//	pool 1000000
//	alice 1200
//	bob 800
//
// Seal checks only the shape (valid account names, integer units), not the
// rules ComputeRewards enforces: usage an accounting service sends with a
// repeated account or negative units is sealed as it came, so the epoch is
// quarantined with the evidence kept. usage is sorted in place.
func Seal(pool Amount, usage []Usage) ([]byte, error) {
	if len(usage) > MaxAccounts {
		return nil, fmt.Errorf("usage lists more than %d accounts", MaxAccounts)
	}
	size := len(sealedHeader) + 48
	for i := range usage {
		u := &usage[i]
		if !ValidAccount(u.Account) {
			return nil, fmt.Errorf("usage[%d]: account %q is not 1–%d printable ASCII characters without spaces", i, printable(u.Account), MaxAccountLen)
		}
		canon, ok := canonicalInteger(u.Units)
		if !ok {
			return nil, fmt.Errorf("usage[%d] (account %s): units %q are not a decimal integer", i, u.Account, printable(u.Units))
		}
		u.Units = canon
		size += len(u.Account) + len(canon) + 2
	}
	slices.SortFunc(usage, func(a, b Usage) int {
		if c := strings.Compare(a.Account, b.Account); c != 0 {
			return c
		}
		return strings.Compare(a.Units, b.Units)
	})
	b := make([]byte, 0, size)
	b = append(b, sealedHeader...)
	b = append(b, "pool "...)
	b = pool.AppendDecimal(b)
	b = append(b, '\n')
	for _, u := range usage {
		b = append(b, u.Account...)
		b = append(b, ' ')
		b = append(b, u.Units...)
		b = append(b, '\n')
	}
	return b, nil
}

// Hash is the hex SHA-256 that names sealed inputs and artifacts.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Violation is a failed check on an epoch's inputs or payouts: the epoch is
// quarantined with Reason and no intents are emitted for it.
type Violation struct{ Reason string }

func (v *Violation) Error() string { return "quarantine: " + v.Reason }

// ParseSealed reads sealed inputs. Units that are negative or above 2^64−1
// are a *Violation; a file that is not sealed inputs is a plain error.
// Account strings share the memory of sealed.
func ParseSealed(sealed []byte) (Inputs, error) {
	text := string(sealed) // one copy; every account is a substring of it
	if !strings.HasPrefix(text, sealedHeader) {
		return Inputs{}, fmt.Errorf("sealed inputs: missing header %q", strings.TrimSpace(sealedHeader))
	}
	text = text[len(sealedHeader):]
	line, rest, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasPrefix(line, "pool ") {
		return Inputs{}, fmt.Errorf("sealed inputs: second line must be the pool")
	}
	pool, err := ParseAmount(line[len("pool "):])
	if err != nil {
		return Inputs{}, fmt.Errorf("sealed inputs: pool: %w", err)
	}
	in := Inputs{Pool: pool, Entries: make([]Entry, 0, bytes.Count(sealed, []byte{'\n'}))}
	for n := 3; rest != ""; n++ {
		line, rest, ok = strings.Cut(rest, "\n")
		if !ok {
			return Inputs{}, fmt.Errorf("sealed inputs: line %d is not terminated", n)
		}
		account, units, ok := strings.Cut(line, " ")
		if !ok || !ValidAccount(account) {
			return Inputs{}, fmt.Errorf("sealed inputs: line %d is not \"<account> <units>\"", n)
		}
		if strings.HasPrefix(units, "-") {
			return Inputs{}, &Violation{Reason: fmt.Sprintf("account %s has negative units (%s)", account, units)}
		}
		u, err := strconv.ParseUint(units, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return Inputs{}, &Violation{Reason: fmt.Sprintf("account %s has units above 2^64−1 (%s)", account, units)}
			}
			return Inputs{}, fmt.Errorf("sealed inputs: line %d: units %q are not an integer", n, units)
		}
		in.Entries = append(in.Entries, Entry{Account: account, Units: u})
	}
	return in, nil
}

func printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
