package solana

import (
	"context"
	"fmt"

	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
)

// ClusterCustom is the Config.Cluster that checks nothing: a local or
// private cluster whose genesis hash keeper cannot know.
const ClusterCustom = "custom"

// clusters are the public clusters' genesis hashes, by the names the Solana
// CLI gives them (solana config set --url mainnet-beta).
var clusters = map[string]string{
	"mainnet-beta": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
	"devnet":       "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG",
	"testnet":      "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY",
}

// CheckCluster reads the node's genesis hash (getGenesisHash) and returns a
// permanent error naming both clusters when it is not the configured
// cluster's, so keeper never anchors on a cluster it was not pointed at
// (say, a devnet URL left in a mainnet deployment). A node that cannot be
// asked is a retryable error. With Cluster custom it asks nothing.
func (a *Adapter) CheckCluster(ctx context.Context) error {
	want, ok := clusters[a.cfg.Cluster]
	if !ok {
		return nil
	}
	got, err := a.genesisHash(ctx)
	if err != nil {
		return err
	}
	if got == want {
		return nil
	}
	on := "an unknown cluster"
	for name, h := range clusters {
		if h == got {
			on = name
		}
	}
	return retry.Permanent(fmt.Errorf("solana: cluster mismatch: configured %s (genesis hash %s), node at %s is on %s (genesis hash %s)",
		a.cfg.Cluster, want, redact.Endpoint(a.rpcURL), on, got))
}
