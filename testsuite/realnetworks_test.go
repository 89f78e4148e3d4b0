package testsuite

import (
	"encoding/json"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/params"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
	"github.com/keeperhq/keeper/internal/store"
)

// Real networks' behaviour (docs/chains.md, Going to mainnet), each reproduced on the
// local chains or through dev/rpcfault and run through a whole keeper node.
// Each ends with every evidence confirmed exactly once (checkExactlyOnce
// verifies the receipts on the chains themselves) and the behaviour on
// /metrics. Several providers per chain are in providers_test.go.

func TestChainFaultPublicEndpointsAnswering429BeyondTheirBudgetStillConfirmEachEvidenceOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, solana: true, evmProxy: true, solProxy: true})
	for _, p := range []*rpcfault.Proxy{s.evmProxy, s.solProxy} {
		p.SetFaults(rpcfault.Faults{PerSecond: 10})
	}
	ids := s.post(t, 0, 12)
	s.checkExactlyOnce(t, ids, 3*time.Minute)

	for _, c := range []struct {
		chain string
		proxy *rpcfault.Proxy
	}{{evm.Name, s.evmProxy}, {solana.Name, s.solProxy}} {
		assert.Positive(t, c.proxy.Stats().Throttled, "%s: the endpoint answered 429s", c.chain)
		assert.Positive(t, s.metric(t, "keeper_rpc_endpoint_throttled_total", c.chain), "%s: the 429s on /metrics", c.chain)
		assert.Positive(t, s.metric(t, "keeper_rpc_endpoint_rate_wait_seconds_total", c.chain), "%s: the pauses they caused, on /metrics", c.chain)
	}
}

func TestChainFaultEtherLinkDroppingUnderpricedAnchorsSilentlyStillConfirmsEachEvidenceOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, evmProxy: true, tune: func(c *faultStack) {
		c.cfg.EVM.NoTip, c.cfg.EVM.BlockTime = true, evmBlockTime // as the etherlink presets set them
	}})
	// The base fee rose to 5 gwei under a backlog, but the node still says
	// 1 gwei: anchors priced on what it says are dropped without a trace.
	m := rpcfault.EtherLinkFees()
	m.MinBaseFee, m.StaleBaseFee = big.NewInt(5*params.GWei), big.NewInt(params.GWei)
	s.evmProxy.SetFeeMarket(&m)
	ids := s.post(t, 0, 8)
	require.Eventually(t, func() bool { return s.evmProxy.Stats().Dropped >= 2 }, time.Minute, 50*time.Millisecond)
	m.StaleBaseFee = nil // the node catches up
	s.evmProxy.SetFeeMarket(&m)

	s.checkExactlyOnce(t, ids, 2*time.Minute)
	assert.Positive(t, s.metric(t, "keeper_anchor_dropped_total", evm.Name), "the silent drops, on /metrics")
	t.Logf("%d anchors dropped silently, each re-signed on its nonce", s.evmProxy.Stats().Dropped)
}

func TestChainFaultAFinalizedBlockThatStopsMakesKeeperUnreadyNamingTheCauseUntilItMoves(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, tune: func(c *faultStack) {
		c.cfg.EVM.FinalityStall = 2 * time.Second
	}})
	s.evm.FreezeFinality()
	ids := s.post(t, 0, 4)

	var checks map[string]string
	require.Eventually(t, func() bool {
		var ready bool
		ready, checks = readyz(t, s.node.APIAddr())
		return !ready
	}, time.Minute, 100*time.Millisecond, "readiness turns false")
	assert.Contains(t, checks["chain:"+evm.Name], "finalized block 0 has not moved", "the check names the cause: %v", checks)
	assert.Equal(t, 1.0, s.metric(t, "keeper_chain_finalized_stalled", evm.Name))
	for _, id := range ids {
		ev, err := s.st.GetEvidence(t.Context(), id)
		require.NoError(t, err)
		assert.NotEqual(t, store.StatusConfirmed, ev.Status, "nothing is final while finality stands still")
	}

	s.evm.ThawFinality()
	s.checkExactlyOnce(t, ids, 2*time.Minute)
	require.Eventually(t, func() bool { ready, _ := readyz(t, s.node.APIAddr()); return ready }, time.Minute, 100*time.Millisecond)
	assert.Zero(t, s.metric(t, "keeper_chain_finalized_stalled", evm.Name))
}

func TestChainFaultSolanaCongestionDropsAnchorsWithoutAPriorityFeeAndEachEvidenceConfirmsOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{solana: true})
	// From now on blocks take only transactions paying 50,000
	// micro-lamports a compute unit; recent fees still say 0.
	const congestion = 50_000
	s.sol.Advance(150) // a quiet fee window: recent blocks took anything
	s.sol.Congest(congestion)
	ids := s.post(t, 0, 8)

	s.checkExactlyOnce(t, ids, 3*time.Minute)
	assert.Positive(t, s.metric(t, "keeper_anchor_dropped_total", solana.Name), "anchors priced on the quiet past expired unseen, on /metrics")
	assert.GreaterOrEqual(t, s.metric(t, "keeper_chain_compute_unit_price_microlamports", solana.Name), float64(congestion), "the price that landed, on /metrics")
}

// readyz is the API's readiness and its checks.
func readyz(t *testing.T, apiAddr string) (bool, map[string]string) {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, body.Ready, resp.StatusCode == http.StatusOK)
	return body.Ready, body.Checks
}
