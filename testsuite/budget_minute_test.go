//go:build budget

package testsuite

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
)

// idleWindow: the docs/chains.md's figure is per minute, so .ci/run counts a
// whole one (go test -tags budget).
const idleWindow = time.Minute

// TestUnderLoadTheEtherLinkPresetsAndSolanasPublicBudgetHoldForAMinute
// anchors an evidence on both local chains every 5 s for a minute, so
// batches await finality all along, with the EtherLink presets (which give
// the local chain EtherLink mainnet's id too) and Solana's public-cluster polls, and
// counts each chain's head probes and status rounds at a proxy: the figures of
// docs/chains.md, "Polling budget".
func TestUnderLoadTheEtherLinkPresetsAndSolanasPublicBudgetHoldForAMinute(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = tempDir(t)
	cfg.AnchorInterval = config.DevAnchorInterval // a batch per evidence
	cfg.Dev.EVMBlockTime, cfg.Dev.SolanaSlotTime = 500*time.Millisecond, 400*time.Millisecond
	cfg.EVM.Network = "etherlink-mainnet"
	cfg.NetworkPresets(nil)
	cfg.SolanaPoll = config.ChainPoll{Confirm: config.OptionalDuration{D: 4 * time.Second, Set: true}, Head: config.OptionalDuration{D: 2 * time.Second, Set: true}}
	require.Equal(t, 2*time.Second, cfg.HeadPollFor("etherlink"), "the preset's")
	node, evm, sol := startCounted(t, cfg)
	hc := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	for i := 0; time.Since(start) < time.Minute; i++ {
		code, _, err := post(hc, node.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": []string{"etherlink", "solana"}})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
		time.Sleep(5 * time.Second)
	}
	minute := time.Since(start).Minutes()
	for chain, c := range map[string]*rpcCounter{"etherlink": evm, "solana": sol} {
		got := c.take()
		var probes, rounds int
		for m, n := range got.methods {
			switch {
			case m == "eth_blockNumber" || m == "eth_blockNumber+eth_getBlockByNumber" || m == "getSlot": // EtherLink's probe reads `finalized` too
				probes += n
			case strings.Contains(m, "eth_getTransactionReceipt") || m == "getSignatureStatuses":
				rounds += n
			}
		}
		t.Logf("%s under load for %.2f min: %d requests, %d head probes, %d status rounds; %v", chain, minute, got.requests, probes, rounds, got.methods)
		assert.LessOrEqual(t, float64(probes), 30*minute+1, "%s: one head probe per 2 s", chain)
		assert.LessOrEqual(t, float64(rounds), 30*minute+1, "%s: one status round per new head", chain)
	}
}
