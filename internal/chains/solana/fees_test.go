package solana

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/retry"
)

// congestionPrice is the least compute unit price a congested devnet takes.
const congestionPrice = 50_000

// congested starts a devnet under congestion whose whole fee window (150
// blocks) was produced congested.
func congested(t *testing.T) (*devnet.Devnet, sol.PrivateKey) {
	t.Helper()
	chain, payer := startDevnet(t, 10*time.Millisecond)
	chain.Congest(congestionPrice)
	chain.Advance(150)
	return chain, payer
}

// journaledPrices are the compute unit prices of a batch's journaled
// transactions, oldest first.
func journaledPrices(t *testing.T, j *chaintest.Journal, batch int64) []uint64 {
	t.Helper()
	var out []uint64
	for _, r := range j.Records(batch) {
		var m txMeta
		require.NoError(t, json.Unmarshal(r.Meta, &m))
		out = append(out, m.ComputeUnitPrice)
	}
	return out
}

// expire ages a submitted batch's transaction past its blockhash, unseen,
// and checks that Status reports it Dropped.
func expire(t *testing.T, chain *devnet.Devnet, a *Adapter, batch int64, j *chaintest.Journal) {
	t.Helper()
	chain.Advance(expireBlocks)
	require.Equal(t, chains.Dropped, waitFor(t, a, batch, j, 10*time.Second).State)
}

func TestUnderCongestionAnAnchorWithoutAPriorityFeeNeverLands(t *testing.T) {
	chain, payer := congested(t)
	a := newAdapter(t, chain.URL(), payer) // PriorityFee 0, MaxPriorityFee 0: no fee
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 1, Root: rootOf("no fee under congestion")}

	_, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err, "the node accepts it")
	slot := chain.Slot()
	require.Eventually(t, func() bool { return chain.Slot() >= slot+30 }, 30*time.Second, 10*time.Millisecond,
		"30 slots pass, and several rebroadcasts")
	expire(t, chain, a, 1, j)

	assert.Equal(t, []uint64{0}, journaledPrices(t, j, 1))
	assert.Zero(t, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
}

func TestUnderCongestionAnAnchorPricedFromRecentPrioritizationFeesLands(t *testing.T) {
	chain, payer := congested(t)
	a := newAdapter(t, chain.URL(), payer, func(c *Config) { c.MaxPriorityFee = 1_000_000 })
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 2, Root: rootOf("priced under congestion")}

	ref, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	st := waitFor(t, a, 2, j, 10*time.Second)

	require.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, ref, st.Ref)
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
	prices := journaledPrices(t, j, 2)
	require.Len(t, prices, 1, "landed at the first try")
	assert.GreaterOrEqual(t, prices[0], uint64(congestionPrice))
	assert.LessOrEqual(t, prices[0], uint64(congestionPrice*3/2), "the recent fees' percentile, not the cap")

	tx, err := rpc.New(chain.URL()).GetTransaction(context.Background(), sol.MustSignatureFromBase58(ref), &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.EqualValues(t, 5000+(prices[0]*ComputeUnitLimit+999_999)/1_000_000, tx.Meta.Fee,
		"the fee paid: a signature plus price × ComputeUnitLimit")
}

func TestTheMaxPriorityFeeCapsThePriceOfNewAndReSignedAnchors(t *testing.T) {
	chain, payer := congested(t)
	a := newAdapter(t, chain.URL(), payer, func(c *Config) { c.MaxPriorityFee = 20_000 })
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 3, Root: rootOf("capped")}

	_, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	expire(t, chain, a, 3, j)
	_, err = a.Submit(context.Background(), an, j)
	require.NoError(t, err)

	assert.Equal(t, []uint64{20_000, 20_000}, journaledPrices(t, j, 3), "never above the cap, though the market asks 50,000")
	assert.Zero(t, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root), "too cheap to land under this congestion")
}

func TestAnAnchorReSignedAfterExpiryPaysMoreAndLands(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer, func(c *Config) { c.PriorityFee, c.MaxPriorityFee = 10_000, 1_000_000 })
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 4, Root: rootOf("re-signed")}
	chain.DropNext(1) // the first send is lost, so its blockhash expires unseen

	first, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	expire(t, chain, a, 4, j)
	second, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	st := waitFor(t, a, 4, j, 10*time.Second)

	require.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, second, st.Ref)
	assert.NotEqual(t, first, second)
	assert.Equal(t, []uint64{10_000, 15_000}, journaledPrices(t, j, 4), "the floor (no fees on an idle chain), then 50% more")
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
}

func TestAFixedPriorityFeeIsPaidAsGivenWithoutReadingRecentFees(t *testing.T) {
	chain, payer := congested(t)
	a := newAdapter(t, chain.URL(), payer, func(c *Config) { c.PriorityFee = 60_000 })
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 5, Root: rootOf("fixed")}
	chain.ResetCalls()

	_, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err)
	require.Equal(t, chains.Final, waitFor(t, a, 5, j, 10*time.Second).State)

	assert.Equal(t, []uint64{60_000}, journaledPrices(t, j, 5))
	assert.Zero(t, chain.Calls("getRecentPrioritizationFees"))
}

func TestThePriceCombinesFloorMarketReSignAndCap(t *testing.T) {
	p := func(v uint64) *uint64 { return &v }
	for name, c := range map[string]struct {
		floor, ceiling, market uint64
		prev                   *uint64
		want                   uint64
	}{
		"market above the floor":     {floor: 100, ceiling: 1_000_000, market: 5_000, want: 5_000},
		"floor above the market":     {floor: 8_000, ceiling: 1_000_000, market: 5_000, want: 8_000},
		"market above the cap":       {floor: 0, ceiling: 20_000, market: 50_000, want: 20_000},
		"re-sign outbids the last":   {floor: 0, ceiling: 1_000_000, market: 5_000, prev: p(10_000), want: 15_000},
		"re-sign follows the market": {floor: 0, ceiling: 1_000_000, market: 40_000, prev: p(10_000), want: 40_000},
		"re-sign of a free anchor":   {floor: 0, ceiling: 1_000_000, market: 0, prev: p(0), want: ResignMinBump},
		"re-sign at the cap":         {floor: 0, ceiling: 20_000, market: 0, prev: p(20_000), want: 20_000},
	} {
		assert.Equal(t, c.want, priceFor(c.floor, c.ceiling, c.market, c.prev), name)
	}
	assert.EqualValues(t, 0, percentile(nil, 75))
	assert.EqualValues(t, 3, percentile([]uint64{4, 1, 3, 2}, 75), "nearest rank: the 3rd of 4")
	assert.EqualValues(t, 75, percentile(func() []uint64 {
		xs := make([]uint64, 100)
		for i := range xs {
			xs[i] = uint64(100 - i)
		}
		return xs
	}(), 75))
}

func TestAPriorityFeeAboveTheMaximumIsRefusedPermanently(t *testing.T) {
	_, err := New(Config{RPCURL: "http://node", Payer: newKey(t), PriorityFee: 30_000, MaxPriorityFee: 20_000})
	require.ErrorContains(t, err, "priority fee 30000 is above the maximum priority fee 20000")
	assert.True(t, retry.IsPermanent(err))
}

// frontNode fronts upstream with an endpoint that shows each call's method
// to intercept first: a non-nil answer is sent instead of the node's.
func frontNode(t *testing.T, upstream string, intercept func(method string, id json.RawMessage) []byte) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		var c struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &c) == nil {
			if answer := intercept(c.Method, c.ID); answer != nil {
				_, _ = w.Write(answer)
				return
			}
		}
		resp, err := http.Post(upstream, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, "upstream down", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// withoutMethod fronts upstream with an endpoint that answers method with
// JSON-RPC's "method not found", as a provider that leaves it out does.
func withoutMethod(t *testing.T, upstream, method string) string {
	return frontNode(t, upstream, func(m string, id json.RawMessage) []byte {
		if m != method {
			return nil
		}
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":"Method not found"}}`)
	})
}

func TestABurstOfAnchorsSharesOneReadOfRecentFees(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	var reads atomic.Int64
	url := frontNode(t, chain.URL(), func(m string, _ json.RawMessage) []byte {
		if m == "getRecentPrioritizationFees" {
			reads.Add(1)
		}
		return nil
	})
	a := newAdapter(t, url, payer, func(c *Config) { c.MaxPriorityFee = 1_000_000 })
	var clock atomic.Int64 // the adapter's clock, moved by hand
	clock.Store(time.Now().UnixNano())
	a.now = func() time.Time { return time.Unix(0, clock.Load()) }
	j := chaintest.NewJournal()
	submit := func(b int64) {
		_, err := a.Submit(context.Background(), chains.Anchor{BatchID: b, Root: rootOf(fmt.Sprint("burst ", b))}, j)
		require.NoError(t, err)
	}
	for b := range int64(5) {
		submit(10 + b)
	}
	assert.EqualValues(t, 1, reads.Load(), "five submits within a second, one read")
	clock.Add(int64(2 * blockhashReuse))
	submit(20)
	assert.EqualValues(t, 2, reads.Load(), "a later submit reads the market again")
}

func TestWithoutGetRecentPrioritizationFeesAnAnchorPaysTheFloorAndLands(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	url := withoutMethod(t, chain.URL(), "getRecentPrioritizationFees")
	a := newAdapter(t, url, payer, func(c *Config) { c.PriorityFee = 2_000; c.MaxPriorityFee = 1_000_000 })
	j := chaintest.NewJournal()
	an := chains.Anchor{BatchID: 7, Root: rootOf("a node without the fee method")}

	_, err := a.Submit(context.Background(), an, j)
	require.NoError(t, err, "a missing fee method is no reason to stop anchoring")
	st := waitFor(t, a, 7, j, 10*time.Second)
	require.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, []uint64{2_000}, journaledPrices(t, j, 7), "the floor")
	assert.EqualValues(t, 2_000, a.PriorityFee(), "what /metrics shows")
	assert.Equal(t, 1, anchorsOnChain(t, chain.URL(), payer.PublicKey(), an.Root))
}
