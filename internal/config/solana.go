package config

import (
	"cmp"
	"path/filepath"
)

// SolanaConfig configures the Solana adapter.
type SolanaConfig struct {
	Cluster        string // mainnet-beta | devnet | testnet | custom (SolanaClusters)
	RPCURL         string // empty: `keeper dev` starts a local devnet, other commands use http://127.0.0.1:8899
	KeyFile        string // empty: the local devnet's funded fee payer in <data-dir>/chains
	Commitment     string
	PriorityFee    int64 // micro-lamports per compute unit: the price with MaxPriorityFee 0, else the least one
	MaxPriorityFee int64 // cap of the price read from getRecentPrioritizationFees; 0: pay PriorityFee as given
	RPCConnections int
	RPCRate        int
	RPC            RPCEndpoints
}

// HasEndpoint reports whether a Solana endpoint is configured (one URL or
// several); without one `keeper dev` runs a local devnet.
func (s SolanaConfig) HasEndpoint() bool { return s.RPCURL != "" || len(s.RPC.URLs) > 0 }

// SolanaKeyFileOrDefault is the Solana fee payer's key file.
func (c *Config) SolanaKeyFileOrDefault() string {
	return cmp.Or(c.Solana.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DevSolanaKeyFileName))
}

// SolanaClusters are the values of KEEPER_SOLANA_CLUSTER: the public
// clusters, whose genesis hash the Solana adapter checks at start, and
// custom, which checks nothing.
var SolanaClusters = []string{"mainnet-beta", "devnet", "testnet", "custom"}

// solanaKnobs are the settings of Solana.
func (c *Config) solanaKnobs() []Knob {
	cluster := Knob{"solana-cluster", "KEEPER_SOLANA_CLUSTER", "custom", Node,
		"mainnet-beta, devnet or testnet: at start keeper reads the node's genesis hash " +
			"(getGenesisHash) and refuses a node on any other cluster; custom (local or private clusters): " +
			"no check",
		&c.Solana.Cluster}
	rpc := rpcKnobs(rpcChain{
		prefix: "solana", name: "Solana", local: "a local devnet (others use http://127.0.0.1:8899)",
		agreement: "signature statuses", lag: "slot is more slots", maxLag: 150,
		lagNote: " (Solana's getHealth uses 150)",
		url:     &c.Solana.RPCURL, endpoints: &c.Solana.RPC, connections: &c.Solana.RPCConnections, rate: &c.Solana.RPCRate,
	})
	return append(append([]Knob{cluster}, rpc...), c.solanaPayerKnobs()...)
}

// solanaPayerKnobs are the settings of how Solana anchors are paid for and
// when they are final.
func (c *Config) solanaPayerKnobs() []Knob {
	return []Knob{
		{"solana-key-file", "KEEPER_SOLANA_KEY_FILE", "", Node,
			"fee-payer keypair file (JSON array of 64 bytes); empty: " +
				"<data-dir>/chains/solana-devnet-payer.json (the local devnet's funded key)",
			&c.Solana.KeyFile},
		{"solana-commitment", "KEEPER_SOLANA_COMMITMENT", "finalized", Node,
			"commitment at which a Solana anchor is final: confirmed or finalized",
			&c.Solana.Commitment},
		{"solana-priority-fee", "KEEPER_SOLANA_PRIORITY_FEE", "0", Node,
			"least priority fee in micro-lamports per compute unit; with KEEPER_SOLANA_MAX_PRIORITY_FEE=0 " +
				"the fee every anchor pays (0 = none)",
			&c.Solana.PriorityFee},
		{"solana-max-priority-fee", "KEEPER_SOLANA_MAX_PRIORITY_FEE", "1000000", Node,
			"highest priority fee in micro-lamports per compute unit: anchors pay the 75th percentile of " +
				"getRecentPrioritizationFees (at least KEEPER_SOLANA_PRIORITY_FEE), 50% more than the last " +
				"when re-signed after blockhash expiry, never more than this (1,000,000 × the 20,000-unit " +
				"limit = 20,000 lamports an anchor at most); 0 = pay KEEPER_SOLANA_PRIORITY_FEE as given",
			&c.Solana.MaxPriorityFee},
	}
}
