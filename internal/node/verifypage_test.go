package node

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/config"
)

// fakeNode answers one JSON-RPC method with result, counting the calls.
func fakeNode(t *testing.T, method string, result any, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct{ Method string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method != method {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32601, "message": "no"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVerifyPageNamesEachChainsNetworkAsItsNodeReportsIt(t *testing.T) {
	var evmCalls, solCalls atomic.Int32
	evmNode := fakeNode(t, "eth_chainId", "0xa729", &evmCalls)
	solNode := fakeNode(t, "getGenesisHash", "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d", &solCalls)
	cfg := config.Default()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.EVM.RPCURL, cfg.Solana.RPCURL = evmNode.URL, solNode.URL

	networks := verifyNetworks(cfg)
	want := map[string]string{"eip155:42793": evmNode.URL, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": solNode.URL}
	assert.Equal(t, want, networks(context.Background()))
	assert.Equal(t, want, networks(context.Background()))
	assert.Equal(t, int32(1), evmCalls.Load(), "a node that answered is not asked again")
	assert.Equal(t, int32(1), solCalls.Load())
}

func TestVerifyPageNeitherShowsNorAsksAnEndpointWithAKey(t *testing.T) {
	var calls atomic.Int32
	node := fakeNode(t, "eth_chainId", "0xa729", &calls)
	cfg := config.Default()
	cfg.Chains = []string{"etherlink"}
	cfg.EVM.RPCURL = node.URL + "/?api_key=s3cret"

	assert.Empty(t, verifyNetworks(cfg)(context.Background()))
	assert.Zero(t, calls.Load())
}

func TestVerifyPageLeavesOutANodeThatDoesNotAnswerAndAsksAgainLater(t *testing.T) {
	var calls atomic.Int32
	node := fakeNode(t, "eth_chainId", "0xa729", &calls)
	cfg := config.Default()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.EVM.RPCURL, cfg.Solana.RPCURL = node.URL, node.URL // the Solana "node" knows no getGenesisHash

	networks := verifyNetworks(cfg)
	assert.Equal(t, map[string]string{"eip155:42793": node.URL}, networks(context.Background()))
	assert.Equal(t, map[string]string{"eip155:42793": node.URL}, networks(context.Background()))
	assert.Equal(t, int32(3), calls.Load(), "eth_chainId once, getGenesisHash at every request")
}
