package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/verifypage"
	"github.com/keeperhq/keeper/receipt"
)

// verifyNetworks names the endpoints the /verify page prefills: each
// configured chain's RPC URL under the CAIP-2 network its node reports
// (eth_chainId, getGenesisHash). A node is asked when the page is served
// until it has answered once; endpoints the page may not show (see
// verifypage.Shareable) are never asked.
func verifyNetworks(cfg config.Config) verifypage.Networks {
	type chain struct {
		url     string
		network func(ctx context.Context, url string) (string, error)
	}
	var all []chain
	if cfg.HasChain("etherlink") {
		all = append(all, chain{EVMRPC(cfg), evmNetwork})
	}
	if cfg.HasChain("solana") {
		all = append(all, chain{SolanaRPC(cfg), solanaNetwork})
	}
	var (
		mu    sync.Mutex
		known = make([]string, len(all)) // the network of all[i], once its node said
	)
	return func(ctx context.Context) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]string{}
		for i, c := range all {
			if !verifypage.Shareable(c.url) {
				continue
			}
			if known[i] == "" {
				if n, err := c.network(ctx, c.url); err == nil {
					known[i] = n
				}
			}
			if known[i] != "" {
				out[known[i]] = c.url
			}
		}
		return out
	}
}

func evmNetwork(ctx context.Context, url string) (string, error) {
	var id string
	if err := rpcCall(ctx, url, "eth_chainId", &id); err != nil {
		return "", err
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(id, "0x"), 16)
	if !ok || !strings.HasPrefix(id, "0x") || !n.IsUint64() {
		return "", fmt.Errorf("eth_chainId: %q is not a chain id", id)
	}
	return receipt.EVMNetwork(n.Uint64()), nil
}

func solanaNetwork(ctx context.Context, url string) (string, error) {
	var h string
	if err := rpcCall(ctx, url, "getGenesisHash", &h); err != nil {
		return "", err
	}
	if len(h) < 32 {
		return "", fmt.Errorf("getGenesisHash: %q is too short for a hash", h)
	}
	return receipt.SolanaNetwork(h), nil
}

// rpcCall makes one JSON-RPC 2.0 call without parameters.
func rpcCall(ctx context.Context, url, method string, result any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": []any{}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if out.Error != nil {
		return fmt.Errorf("%s: %s", method, out.Error.Message)
	}
	return json.Unmarshal(out.Result, result)
}
