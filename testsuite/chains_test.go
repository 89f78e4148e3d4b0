package testsuite

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// TestThousandEvidenceOnBothLocalChainsConfirmAndVerify anchors 1,000
// evidence on the local EtherLink-like chain and the local Solana devnet at
// once, as `keeper dev` does by default, and verifies receipts against the
// chains themselves.
func TestThousandEvidenceOnBothLocalChainsConfirmAndVerify(t *testing.T) {
	endToEnd(t)
	node, cfg, st, chs := startOnLocalChains(t, nil)

	const n = 1000
	hc := &http.Client{Timeout: 10 * time.Second}
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				code, id, err := post(hc, node.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": []string{"etherlink", "solana"}})
				if !assert.NoError(t, err) || !assert.Equal(t, http.StatusAccepted, code) {
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	end := waitConfirmed(t, st, n, 3*time.Minute)

	// Every evidence has one anchor per chain; count the transactions sent.
	batches := map[string]map[int64]bool{"etherlink": {}, "solana": {}}
	for _, id := range ids {
		ev, err := st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, ev.Anchors, 2)
		for _, a := range ev.Anchors {
			require.Equal(t, store.StatusConfirmed, a.Status)
			batches[a.Chain][a.BatchID] = true
		}
	}
	txs := map[string]int{}
	for chain, bs := range batches {
		for b := range bs {
			recs, err := st.Transactions(context.Background(), b)
			require.NoError(t, err)
			txs[chain] += len(recs)
		}
	}
	ec, err := ethclient.Dial(cfg.EVM.RPCURL)
	require.NoError(t, err)
	defer ec.Close()
	nonce, err := ec.NonceAt(context.Background(), chs["etherlink"].(*evm.Adapter).Address(), nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(len(batches["etherlink"])), nonce, "one EVM transaction per batch: the signer's nonce counts them")

	t.Logf("%d evidence on both chains, all confirmed after %v", n, end.Sub(start).Round(time.Millisecond))
	for _, chain := range []string{"etherlink", "solana"} {
		var calls int64
		switch a := chs[chain].(type) {
		case *evm.Adapter:
			calls = a.StatusCalls()
		case *solana.Adapter:
			calls = a.StatusCalls()
		}
		t.Logf("  %-9s batches %d, transactions journaled %d, status RPC calls %d", chain, len(batches[chain]), txs[chain], calls)
		reported := scrape(t, "http://"+node.APIAddr()+"/metrics").value("keeper_chain_status_calls_total", "chain", chain)
		assert.InDelta(t, float64(calls), reported, float64(calls)/10+2, "/metrics reports %s's status calls", chain)
	}

	// Receipts verify against the chains, not against keeper.
	for _, id := range ids[:20] {
		ev, err := st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		r := receiptFor(t, node.APIAddr(), ev.ID)
		assert.Equal(t, receipt.Version, r.Version, "anchors of log checkpoints: version 3")
		networks := map[string]string{}
		for _, a := range r.Anchors {
			networks[a.Chain] = a.Network
			assert.NotEmpty(t, a.BlockHash, "%s on %s names its block's hash", id, a.Chain)
			assert.NotEmpty(t, a.Finality, "%s on %s names its finality", id, a.Chain)
		}
		assert.Equal(t, receipt.LocalEVMNetwork, networks["etherlink"], "the local EVM chain's id, read from the node")
		assert.Regexp(t, `^solana:[1-9A-HJ-NP-Za-km-z]{32}$`, networks["solana"], "the devnet's genesis hash, read from the node")
		rpc := map[string]string{"etherlink": cfg.EVM.RPCURL, "solana": cfg.Solana.RPCURL}
		pinned := pinnedTrust(t, node.APIAddr(), map[string]string{"etherlink": chains.AccountOf(chs["etherlink"]), "solana": chains.AccountOf(chs["solana"])})
		for _, c := range cli.VerifyReceipt(context.Background(), r, rpc, pinned) {
			assert.True(t, c.OK, "%s on %s: %s", id, c.Chain, c.Failed())
		}
	}
}

// startOnLocalChains starts one keeper node (API and worker) on the embedded
// Temporal server and both local chains, with fast blocks and polls; mutate,
// when set, adjusts the configuration first.
func startOnLocalChains(t *testing.T, mutate func(*config.Config)) (*node.Node, config.Config, *store.Store, map[string]chains.Adapter) {
	t.Helper()
	srv, cfg, chs, dir := startLocalChains(t, mutate)
	st := openStore(t, dir)
	return startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs), cfg, st, chs
}

// startLocalChains starts the embedded Temporal server and both local
// chains (or the ones mutate leaves in cfg.Chains) and their adapters, for
// the nodes a test starts on them; dir is the stack's data directory.
func startLocalChains(t *testing.T, mutate func(*config.Config)) (*devserver.Server, config.Config, map[string]chains.Adapter, string) {
	t.Helper()
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.Dev.EVMPort, cfg.Dev.SolanaPort = 0, 0
	cfg.Dev.EVMBlockTime, cfg.Dev.SolanaSlotTime = 100*time.Millisecond, 25*time.Millisecond
	cfg.ConfirmPoll = 100 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	net, err := localnet.StartFor(context.Background(), &cfg, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(net.Stop)
	chs, err := node.NewChains(context.Background(), cfg, nil, testLogger(t))
	require.NoError(t, err)
	return srv, cfg, chs, dir
}

// pinnedTrust is what a verifier of the node's receipts pins: the log's
// key as /log/key serves it, and each chain's anchoring account
// (trust.ShortForm).
func pinnedTrust(t *testing.T, apiAddr string, accounts map[string]string) *trust.Root {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/log/key")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	key, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var short []string
	for chain, account := range accounts {
		short = append(short, chain+"="+account)
	}
	root, err := trust.ShortForm(strings.TrimSpace(string(key)), short)
	require.NoError(t, err)
	return &root
}

func receiptFor(t *testing.T, apiAddr, id string) receipt.Receipt {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/v1/evidence/" + id + "/receipt")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r, err := receipt.Parse(raw)
	require.NoError(t, err)
	return r
}
