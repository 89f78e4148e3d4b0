package testsuite

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// TestAWorkerListsItsAccountsInTheTrustRootItServesAndTheAuditPinsIt: a
// node on both local chains lists its two accounts, each on the network
// its chain's node names, serves the root signed at /log/trust, and an
// audit that pins that root (and nothing keeper lists) finds nothing.
func TestAWorkerListsItsAccountsInTheTrustRootItServesAndTheAuditPinsIt(t *testing.T) {
	endToEnd(t)
	n, cfg, st, _ := startOnLocalChains(t, nil)
	hc := &http.Client{Timeout: 10 * time.Second}
	for i := range 5 {
		code, _, err := post(hc, n.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": []string{"etherlink", "solana"}})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
	}
	waitConfirmed(t, st, 5, time.Minute)

	base := "http://" + n.APIAddr() + "/log"
	resp, err := hc.Get(base + "/trust")
	require.NoError(t, err)
	note, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(note))
	root, err := trust.Open(note, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{receipt.LocalEVMNetwork}, root.Networks()[:1])
	require.Len(t, root.Accounts, 2)
	assert.Equal(t, "etherlink", root.Accounts[0].Chain)
	assert.Equal(t, "solana", root.Accounts[1].Chain)

	log, err := evlog.NewClient(base, nil)
	require.NoError(t, err)
	r, err := audit.Run(context.Background(), audit.Options{Log: log, Trust: &root, Chains: []audit.Chain{
		{Name: "etherlink", RPC: cfg.EVM.RPCURL}, {Name: "solana", RPC: cfg.Solana.RPCURL}}})
	require.NoError(t, err)
	assert.True(t, r.OK(), "%v", r.Findings)
	assert.Positive(t, r.Anchors["etherlink"])
	assert.Positive(t, r.Anchors["solana"])
}
