package rewards

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomEpoch makes a pool of up to 2^127 and n accounts whose units are
// small, word-sized or mixed, so both division paths are exercised.
func randomEpoch(r *rand.Rand, n int) (Amount, []Usage) {
	var pool Amount
	switch r.IntN(4) {
	case 0:
		pool = AmountOf(r.Uint64N(1_000_000) + 1)
	case 1:
		pool = AmountOf(r.Uint64() | 1)
	case 2:
		pool = Amount{Hi: r.Uint64() >> 1, Lo: r.Uint64()} // below 2^127
	default:
		pool = MaxPool
	}
	usage := make([]Usage, n)
	wide := r.IntN(3)
	for i := range usage {
		var u uint64
		switch {
		case wide == 0:
			u = r.Uint64N(1000) + 1
		case wide == 1:
			u = r.Uint64() | 1 // total far beyond a word: the math/big path
		default:
			u = r.Uint64N(1<<40) + 1
		}
		usage[i] = Usage{Account: fmt.Sprintf("acct-%08x-%d", r.Uint32(), i), Units: strconv.FormatUint(u, 10)}
	}
	return pool, usage
}

func sealAndParse(t *testing.T, pool Amount, usage []Usage) Inputs {
	t.Helper()
	sealed, err := Seal(pool, slices.Clone(usage))
	require.NoError(t, err)
	in, err := ParseSealed(sealed)
	require.NoError(t, err)
	return in
}

// oracle splits the pool with math/big, the slow obvious way.
func oracle(in Inputs) []*big.Int {
	pool := in.Pool.Big()
	total := new(big.Int)
	for _, e := range in.Entries {
		total.Add(total, new(big.Int).SetUint64(e.Units))
	}
	pay := make([]*big.Int, len(in.Entries))
	rem := make([]*big.Int, len(in.Entries))
	left := new(big.Int).Set(pool)
	for i, e := range in.Entries {
		num := new(big.Int).Mul(pool, new(big.Int).SetUint64(e.Units))
		pay[i], rem[i] = new(big.Int).QuoRem(num, total, new(big.Int))
		left.Sub(left, pay[i])
	}
	idx := make([]int, len(in.Entries))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return rem[b].Cmp(rem[a]) })
	for _, i := range idx[:left.Int64()] {
		pay[i].Add(pay[i], big.NewInt(1))
	}
	return pay
}

func TestSplitSumsToThePoolAndStaysWithinOneOfEachExactShare(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 7, 100, 1000, 10_000, 10_000}
	for trial := 0; trial < 40; trial++ {
		n := sizes[trial%len(sizes)]
		if trial >= len(sizes) {
			n = r.IntN(10_000) + 1
		}
		pool, usage := randomEpoch(r, n)
		t.Run(fmt.Sprintf("%d_accounts_pool_%s", n, pool), func(t *testing.T) {
			in := sealAndParse(t, pool, usage)
			res, err := Compute(in)
			require.NoError(t, err)

			total := res.TotalUnits.Big()
			sum := new(big.Int)
			want := oracle(in)
			for i, p := range res.Payouts {
				pb := p.Big()
				sum.Add(sum, pb)
				// |p − pool·u/total| < 1  ⇔  |p·total − pool·u| < total
				diff := new(big.Int).Mul(pb, total)
				diff.Sub(diff, new(big.Int).Mul(pool.Big(), new(big.Int).SetUint64(in.Entries[i].Units)))
				require.Negative(t, diff.CmpAbs(total), "payout %s to %s is 1 or more away from its exact share", p, in.Entries[i].Account)
				require.Zero(t, pb.Cmp(want[i]), "payout to %s: largest remainder, ties by account order", in.Entries[i].Account)
			}
			require.Zero(t, sum.Cmp(pool.Big()), "payouts sum to the pool exactly")
			require.Equal(t, pool, res.TotalPaid)
		})
	}
}

func TestSplitIsTheSameWhateverOrderTheUsageArrivesIn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 10; trial++ {
		pool, usage := randomEpoch(r, r.IntN(5000)+1)
		first, err := Seal(pool, slices.Clone(usage))
		require.NoError(t, err)
		r.Shuffle(len(usage), func(i, j int) { usage[i], usage[j] = usage[j], usage[i] })
		second, err := Seal(pool, slices.Clone(usage))
		require.NoError(t, err)
		require.Equal(t, Hash(first), Hash(second), "sealed inputs are canonical")

		a, err := Compute(sealAndParse(t, pool, usage))
		require.NoError(t, err)
		r.Shuffle(len(usage), func(i, j int) { usage[i], usage[j] = usage[j], usage[i] })
		b, err := Compute(sealAndParse(t, pool, usage))
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}

func TestLeftoverGoesToTheLargestFractionThenToTheFirstAccount(t *testing.T) {
	split := func(pool uint64, usage ...Usage) map[string]string {
		res, err := Compute(sealAndParse(t, AmountOf(pool), usage))
		require.NoError(t, err)
		in := sealAndParse(t, AmountOf(pool), usage)
		out := map[string]string{}
		for i, e := range in.Entries {
			out[e.Account] = res.Payouts[i].String()
		}
		return out
	}
	// 100 · 1/3 = 33.33…, 100 · 2/3 = 66.66…: the leftover unit goes to the larger fraction.
	assert.Equal(t, map[string]string{"a": "33", "b": "67"}, split(100, Usage{"b", "2"}, Usage{"a", "1"}))
	// Three equal thirds of 10: the tie goes to the account that sorts first.
	assert.Equal(t, map[string]string{"a": "4", "b": "3", "c": "3"}, split(10, Usage{"c", "1"}, Usage{"b", "1"}, Usage{"a", "1"}))
	// A pool smaller than the number of accounts.
	assert.Equal(t, map[string]string{"a": "1", "b": "1", "c": "0"}, split(2, Usage{"a", "5"}, Usage{"b", "5"}, Usage{"c", "5"}))
}

func TestInputsThatBreakTheRulesAreViolations(t *testing.T) {
	for name, usage := range map[string][]Usage{
		"duplicate account": {{"alice", "5"}, {"bob", "1"}, {"alice", "7"}},
		"zero total units":  {{"alice", "0"}, {"bob", "000"}},
		"no accounts":       {},
		"negative units":    {{"alice", "-3"}, {"bob", "4"}},
		"units above 2^64":  {{"alice", "18446744073709551616"}},
	} {
		t.Run(name, func(t *testing.T) {
			sealed, err := Seal(AmountOf(1000), usage)
			require.NoError(t, err, "sealing keeps the inputs as they came")
			in, err := ParseSealed(sealed)
			if err == nil {
				_, err = Compute(in)
			}
			var v *Violation
			require.True(t, errors.As(err, &v), "got %v", err)
			assert.NotEmpty(t, v.Reason)
		})
	}
}

func TestConservationCheckCatchesAWrongSplit(t *testing.T) {
	in := sealAndParse(t, AmountOf(10), []Usage{{"a", "1"}, {"b", "1"}})
	res, err := Compute(in)
	require.NoError(t, err)
	res.Payouts[0] = res.Payouts[0].Sub(AmountOf(1))
	var v *Violation
	require.ErrorAs(t, Check(in, res), &v)
	res.Payouts[0] = Amount{Hi: ^uint64(0), Lo: ^uint64(0)} // what −1 wraps to
	require.ErrorAs(t, Check(in, res), &v)
}

func TestAmountsRoundTripAllOf128Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		a := Amount{Hi: r.Uint64() >> r.UintN(64), Lo: r.Uint64()}
		s := a.String()
		require.Equal(t, a.Big().String(), s)
		b, err := ParseAmount(s)
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
	max := "340282366920938463463374607431768211455"
	a, err := ParseAmount(max)
	require.NoError(t, err)
	assert.Equal(t, max, a.String())
	for _, bad := range []string{"340282366920938463463374607431768211456", "", "-1", "+1", "1e3", "1.0", " 1", "0x10"} {
		_, err := ParseAmount(bad)
		assert.ErrorIs(t, err, ErrAmount, bad)
	}
	v, err := ParseAmount("000170141183460469231731687303715884105728")
	require.NoError(t, err)
	assert.Equal(t, MaxPool, v, "2^127 with leading zeros")
}

func TestInlineUsageRulesNameTheEntry(t *testing.T) {
	for _, c := range []struct {
		usage []Usage
		code  string
		index int
	}{
		{nil, "empty_usage", -1},
		{[]Usage{{"a", "1"}, {"a", "2"}}, "duplicate_account", 1},
		{[]Usage{{"a", "0"}}, "invalid_units", 0},
		{[]Usage{{"a", "1"}, {"b", "-4"}}, "invalid_units", 1},
		{[]Usage{{"a", "1.5"}}, "invalid_units", 0},
		{[]Usage{{"a", "18446744073709551616"}}, "invalid_units", 0},
		{[]Usage{{"has space", "1"}}, "invalid_account", 0},
		{[]Usage{{"", "1"}}, "invalid_account", 0},
	} {
		err := CheckUsage(c.usage)
		require.NotNil(t, err, "%v", c.usage)
		assert.Equal(t, c.code, err.Code, "%v", c.usage)
		assert.Equal(t, c.index, err.Index, "%v", c.usage)
	}
	assert.Nil(t, CheckUsage([]Usage{{"a", "007"}, {"b", "18446744073709551615"}}))
}
