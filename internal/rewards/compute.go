package rewards

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strings"
)

// Result is an epoch's split: Payouts[i] goes to Inputs.Entries[i].
type Result struct {
	Payouts    []Amount
	TotalUnits Amount
	TotalPaid  Amount
}

// Compute splits the pool by usage in integers: each account gets
// floor(pool · units / total_units); what the floors leave over (fewer minor
// units than there are accounts) goes one each to the accounts with the
// largest fractional parts, ties to the account that sorts first. The sum is
// the pool exactly and every payout is within 1 of its exact share.
//
// Inputs that break the rules (no accounts, an account twice, zero total
// units) and a split that fails the conservation check are a *Violation:
// the epoch is quarantined.
func Compute(in Inputs) (Result, error) {
	n := len(in.Entries)
	if in.Pool.Cmp(MaxPool) > 0 {
		return Result{}, &Violation{Reason: fmt.Sprintf("pool %s exceeds 2^127", in.Pool)}
	}
	if n == 0 {
		return Result{}, &Violation{Reason: "zero total units: the inputs list no accounts"}
	}
	var res Result
	for i, e := range in.Entries {
		if i > 0 {
			switch strings.Compare(in.Entries[i-1].Account, e.Account) {
			case 0:
				return Result{}, &Violation{Reason: fmt.Sprintf("duplicate account %s", e.Account)}
			case 1:
				return Result{}, fmt.Errorf("inputs are not sorted by account at %s", e.Account)
			}
		}
		res.TotalUnits, _ = res.TotalUnits.Add(AmountOf(e.Units)) // n·2^64 never reaches 2^128
	}
	if res.TotalUnits.IsZero() {
		return Result{}, &Violation{Reason: fmt.Sprintf("zero total units across %d accounts", n)}
	}

	res.Payouts = make([]Amount, n)
	rems := make([]Amount, n)
	div := newDivider(in.Pool, res.TotalUnits)
	var paid Amount
	for i, e := range in.Entries {
		res.Payouts[i], rems[i] = div.share(e.Units)
		paid, _ = paid.Add(res.Payouts[i]) // at most the pool
	}

	// Σ remainders = (pool − Σ floors) · total, and each remainder is below
	// total: exactly `left` accounts, all with a positive remainder, get one more.
	left := in.Pool.Sub(paid)
	if left.Hi != 0 || left.Lo >= uint64(n) {
		return Result{}, &Violation{Reason: fmt.Sprintf("remainder %s is not below the number of accounts %d", left, n)}
	}
	if left.Lo > 0 {
		order := make([]int32, 0, n)
		for i := range rems {
			if !rems[i].IsZero() {
				order = append(order, int32(i))
			}
		}
		slices.SortFunc(order, func(a, b int32) int {
			if c := rems[b].Cmp(rems[a]); c != 0 {
				return c // larger fractional part first
			}
			return int(a - b) // then account order
		})
		for _, i := range order[:left.Lo] {
			res.Payouts[i], _ = res.Payouts[i].Add(AmountOf(1))
		}
	}
	res.TotalPaid = in.Pool
	if err := Check(in, res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Check is the conservation check on a split: one payout per account, no
// account twice, no payout above the pool (an unsigned wrap-around is how a
// negative payout would show) and payouts summing to the pool exactly.
func Check(in Inputs, res Result) error {
	if len(res.Payouts) != len(in.Entries) {
		return &Violation{Reason: fmt.Sprintf("%d payouts for %d accounts", len(res.Payouts), len(in.Entries))}
	}
	var sum Amount
	for i, p := range res.Payouts {
		if i > 0 && in.Entries[i-1].Account >= in.Entries[i].Account {
			return &Violation{Reason: fmt.Sprintf("duplicate or unordered account %s", in.Entries[i].Account)}
		}
		if p.Cmp(in.Pool) > 0 {
			return &Violation{Reason: fmt.Sprintf("payout %s to %s exceeds the pool", p, in.Entries[i].Account)}
		}
		var overflow bool
		if sum, overflow = sum.Add(p); overflow {
			return &Violation{Reason: "payouts overflow 128 bits"}
		}
	}
	if sum.Cmp(in.Pool) != 0 {
		return &Violation{Reason: fmt.Sprintf("payouts sum to %s, the pool is %s", sum, in.Pool)}
	}
	if res.TotalPaid.Cmp(sum) != 0 {
		return &Violation{Reason: fmt.Sprintf("total paid %s differs from the payouts' sum %s", res.TotalPaid, sum)}
	}
	return nil
}

// divider computes floor(pool·units / total) and its remainder. When total
// fits a word (every realistic epoch) it uses three hardware divisions; wider
// totals go through math/big with reused buffers.
type divider struct {
	pool, total Amount
	// wide path only
	poolB, totalB, num, q, r *big.Int
	buf                      [16]byte
}

func newDivider(pool, total Amount) *divider {
	d := &divider{pool: pool, total: total}
	if total.Hi != 0 {
		d.poolB, d.totalB = pool.Big(), total.Big()
		d.num, d.q, d.r = new(big.Int), new(big.Int), new(big.Int)
	}
	return d
}

func (d *divider) share(units uint64) (q, r Amount) {
	if d.total.Hi == 0 {
		// pool·units as three words n2:n1:n0.
		h0, n0 := bits.Mul64(d.pool.Lo, units)
		h1, l1 := bits.Mul64(d.pool.Hi, units)
		n1, c := bits.Add64(h0, l1, 0)
		n2 := h1 + c
		t := d.total.Lo
		_, rem := bits.Div64(0, n2, t) // the quotient's top word is 0: the share is at most the pool
		q1, rem := bits.Div64(rem, n1, t)
		q0, rem := bits.Div64(rem, n0, t)
		return Amount{q1, q0}, Amount{0, rem}
	}
	d.num.SetUint64(units)
	d.num.Mul(d.num, d.poolB)
	d.q.QuoRem(d.num, d.totalB, d.r)
	return d.amount(d.q), d.amount(d.r)
}

func (d *divider) amount(b *big.Int) Amount {
	b.FillBytes(d.buf[:])
	return Amount{binary.BigEndian.Uint64(d.buf[:8]), binary.BigEndian.Uint64(d.buf[8:])}
}

// AppendLine appends the canonical payout line "<account> <amount>" (no
// newline): the leaves of the run's commitment and the lines of its payouts file.
func AppendLine(b []byte, account string, amount Amount) []byte {
	b = append(b, account...)
	b = append(b, ' ')
	return amount.AppendDecimal(b)
}

// ParseLine splits a canonical payout line.
func ParseLine(line string) (account, amount string, err error) {
	account, amount, ok := strings.Cut(line, " ")
	if !ok || !ValidAccount(account) {
		return "", "", fmt.Errorf("payout line %q is not \"<account> <amount>\"", printable(line))
	}
	if _, err := ParseAmount(amount); err != nil {
		return "", "", fmt.Errorf("payout line %q: amount: %w", printable(line), err)
	}
	return account, amount, nil
}
