package testsuite

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
)

// endpointMetric is a per-provider metric of chain (labels chain, endpoint
// and host come in that order on /metrics).
func (s *faultStack) endpointMetric(t *testing.T, name, chain string, endpoint int) float64 {
	return scrapeMetric(t, s.node.APIAddr(), name, chain+`",endpoint="`+strconv.Itoa(endpoint))
}

// TestChainFaultOfFourEVMProvidersOneIsDownOneLagsOneInventsReceiptsAndEachEvidenceConfirmsOnce
// runs keeper on several providers per chain, as operators do, with the
// providers failing as they do: EtherLink through four (down, a hundred
// blocks behind, one that swallows transactions and invents their
// receipts, an honest one), Solana through two (down, honest). Reads must
// avoid the dead and the lagging one, broadcasts must reach the honest
// one, and the liar must not confirm an anchor on its own: every receipt
// is checked against the chains themselves.
func TestChainFaultOfFourEVMProvidersOneIsDownOneLagsOneInventsReceiptsAndEachEvidenceConfirmsOnce(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	var down, lagging, liar, solDown *rpcfault.Proxy
	s := startFaultStack(t, faultOptions{evm: true, solana: true,
		evmURLs: func(t *testing.T, c *devchain.Chain) []string {
			require.NoError(t, c.Mine(120)) // a chain long enough to lag a hundred blocks behind
			down, lagging, liar = startProxy(t, c.URL()), startProxy(t, c.URL()), startProxy(t, c.URL())
			honest := startProxy(t, c.URL())
			require.NoError(t, down.Down())
			lagging.SetLies(rpcfault.Lies{LagBlocks: 100})
			liar.SetLies(rpcfault.Lies{InventReceipts: true})
			return []string{down.URL(), lagging.URL(), liar.URL(), honest.URL()}
		},
		solURLs: func(t *testing.T, d *devnet.Devnet) []string {
			solDown = startProxy(t, d.URL())
			require.NoError(t, solDown.Down())
			return []string{solDown.URL(), startProxy(t, d.URL()).URL()}
		},
	})
	// The chain includes nothing for a while, so the liar's receipts (in a
	// block already final) are all keeper could see of its anchors.
	s.evm.PauseMining()
	ids := s.post(t, 0, 12)
	require.Eventually(t, func() bool { return liar.Lied() > 0 }, time.Minute, 50*time.Millisecond, "keeper asked the liar for a receipt")
	time.Sleep(3 * time.Second) // status rounds while only the liar has receipts
	s.evm.ResumeMining()
	s.checkExactlyOnce(t, ids, 2*time.Minute)

	assert.Positive(t, liar.Lied(), "the liar was asked for receipts and invented them")
	assert.Positive(t, s.metric(t, "keeper_rpc_receipt_disagreements_total", evm.Name), "its receipts were held back, on /metrics")
	for n, healthy := range map[int]float64{1: 0, 2: 0, 3: 1, 4: 1} {
		assert.Equal(t, healthy, s.endpointMetric(t, "keeper_rpc_endpoint_healthy", evm.Name, n), "etherlink endpoint %d", n)
	}
	assert.Greater(t, s.endpointMetric(t, "keeper_rpc_endpoint_head_lag_blocks", evm.Name, 2), 10.0, "the lagging endpoint's lag, on /metrics")
	assert.Positive(t, s.endpointMetric(t, "keeper_rpc_endpoint_errors_total", evm.Name, 1), "the dead endpoint's errors")
	assert.Zero(t, s.endpointMetric(t, "keeper_rpc_endpoint_healthy", solana.Name, 1))
	assert.Positive(t, s.endpointMetric(t, "keeper_rpc_endpoint_errors_total", solana.Name, 1))
	assert.Equal(t, 1.0, s.endpointMetric(t, "keeper_rpc_endpoint_healthy", solana.Name, 2))
	assert.Zero(t, s.endpointMetric(t, "keeper_rpc_endpoint_requests_total", evm.Name, 2), "only head probes went to the lagging endpoint")
	t.Logf("liar: %d lies; lagging endpoint: %d requests", liar.Lied(), lagging.Stats().Requests)
}
