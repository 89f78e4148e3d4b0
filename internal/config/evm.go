package config

import (
	"cmp"
	"path/filepath"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/receipt"
)

// EVMConfig configures the EtherLink (EVM) adapter.
type EVMConfig struct {
	Network         string // etherlink-mainnet | etherlink-testnet | custom (NetworkPresets)
	RPCURL          string // empty: `keeper dev` starts a local chain, other commands use http://127.0.0.1:8545
	KeyFile         string // empty: the local chain's funded dev key in <data-dir>/chains
	ChainID         int64
	Confirmations   int
	ResubmitTimeout time.Duration
	FeeCeilingGwei  int64
	NoTip           bool          // tip 0, max fee from the node's base fee (EtherLink ignores tips)
	BlockTime       time.Duration // the chain's block time: an anchor the node no longer knows is re-signed after evm.DropBlocks of it; 0: after ResubmitTimeout only
	FinalityStall   time.Duration // a `finalized` block still this long while `latest` moves is reported
	RPCConnections  int
	RPCRate         int
	RPC             RPCEndpoints
	ArchiveRPCURL   string // an archive node, for the backfill's balances of blocks the node no longer keeps the state of; empty: none
}

// HasEndpoint reports whether an EtherLink endpoint is configured (one URL
// or several); without one `keeper dev` runs a local chain.
func (e EVMConfig) HasEndpoint() bool { return e.RPCURL != "" || len(e.RPC.URLs) > 0 }

// EVMKeyFileOrDefault is the EtherLink signer's key file.
func (c *Config) EVMKeyFileOrDefault() string {
	return cmp.Or(c.EVM.KeyFile, filepath.Join(c.DataDir, DevKeyDir, DevEVMKeyFileName))
}

// evmNetworks are the EVM network presets: what EtherLink documents for its
// networks (docs.etherlink.com): chain ids, finality at the `finalized`
// block (the last block posted to and confirmed on Tezos), the public
// endpoint's 1,000 requests a minute and eth_getLogs answers of at most 500
// blocks and 5,000 logs; a sequencer that ignores the tip and drops an
// underpriced transaction silently, about 500 ms blocks; a `finalized` block
// that normally follows within minutes, so 10 minutes without it moving is
// a stall.
var evmNetworks = map[string]struct {
	chainID       int64
	rate          int
	logBlocks     int
	maxLogs       int
	blockTime     time.Duration
	finalityStall time.Duration
}{
	"etherlink-mainnet": {chainID: 42793, rate: 16, logBlocks: 500, maxLogs: 5000, blockTime: 500 * time.Millisecond, finalityStall: 10 * time.Minute},
	"etherlink-testnet": {chainID: 127823, rate: 16, logBlocks: 500, maxLogs: 5000, blockTime: 500 * time.Millisecond, finalityStall: 10 * time.Minute},
}

// evmPreset applies KEEPER_EVM_NETWORK's preset, if it names one, to the
// settings not given.
func (c *Config) evmPreset(given map[string]bool) {
	n, ok := evmNetworks[c.EVM.Network]
	if !ok {
		return
	}
	p := preset{c: c, given: given, name: "KEEPER_EVM_NETWORK=" + c.EVM.Network}
	p.set("KEEPER_EVM_CHAIN_ID", func() { c.EVM.ChainID = n.chainID })
	p.set("KEEPER_EVM_CONFIRMATIONS", func() { c.EVM.Confirmations = 0 })
	p.set("KEEPER_EVM_RPC_RATE", func() { c.EVM.RPCRate = n.rate })
	p.set("KEEPER_BACKFILL_EVM_CHUNK_BLOCKS", func() { c.Backfill.EVMChunkBlocks = min(c.Backfill.EVMChunkBlocks, n.logBlocks) })
	p.set("KEEPER_BACKFILL_EVM_MAX_LOGS", func() { c.Backfill.EVMMaxLogs = min(c.Backfill.EVMMaxLogs, n.maxLogs) })
	p.set("KEEPER_EVM_NO_TIP", func() { c.EVM.NoTip = true })
	p.set("KEEPER_EVM_BLOCK_MS", func() { c.EVM.BlockTime = n.blockTime })
	p.set("KEEPER_EVM_FINALITY_STALL_MS", func() { c.EVM.FinalityStall = n.finalityStall })
}

// evmKnobs are the settings of EtherLink (EVM).
func (c *Config) evmKnobs() []Knob {
	network := Knob{"evm-network", "KEEPER_EVM_NETWORK", "custom", Node,
		"etherlink-mainnet or etherlink-testnet: chain id, finality (the `finalized` block), RPC rate " +
			"(16/s), eth_getLogs range (500 blocks) and answer size (5,000 logs), no tip, 500 ms blocks " +
			"and a 10-minute finality stall as EtherLink documents them, unless set one by one; custom: " +
			"every setting as given",
		&c.EVM.Network}
	rpc := rpcKnobs(rpcChain{
		prefix: "evm", name: "EtherLink", local: "a local chain (others use http://127.0.0.1:8545)",
		agreement: "receipts", lag: "head is more blocks", maxLag: 10,
		rateNote: " (EtherLink's public endpoint allows 1,000 a minute: 16)",
		url:      &c.EVM.RPCURL, endpoints: &c.EVM.RPC, connections: &c.EVM.RPCConnections, rate: &c.EVM.RPCRate,
		archive: &c.EVM.ArchiveRPCURL,
	})
	return append(append([]Knob{network}, rpc...), c.evmSignerKnobs()...)
}

// evmSignerKnobs are the settings of how EtherLink anchors are signed,
// priced and followed to finality.
func (c *Config) evmSignerKnobs() []Knob {
	return []Knob{
		{"evm-key-file", "KEEPER_EVM_KEY_FILE", "", Node,
			"file holding the EtherLink signer's hex private key; empty: <data-dir>/chains/devchain.key " +
				"(the local chain's funded key)",
			&c.EVM.KeyFile},
		{"evm-chain-id", "KEEPER_EVM_CHAIN_ID", strconv.Itoa(receipt.LocalEVMChainID), Node | LocalChains,
			"chain id the EVM node must report, and the local chain's (`keeper dev`, `devchains`); default " +
				strconv.Itoa(receipt.LocalEVMChainID) + ", keeper dev's own, no public network's (etherlink presets: " +
				"mainnet 42793, testnet 127823)",
			&c.EVM.ChainID},
		{"evm-confirmations", "KEEPER_EVM_CONFIRMATIONS", "0", Node,
			"0: final at the node's `finalized` block; N: final N blocks deep (nodes without the tag)",
			&c.EVM.Confirmations},
		{"evm-resubmit-ms", "KEEPER_EVM_RESUBMIT_MS", "60000", Node,
			"an unmined anchor is re-signed with bumped fees after this long",
			msKnob{&c.EVM.ResubmitTimeout}},
		{"evm-fee-ceiling-gwei", "KEEPER_EVM_FEE_CEILING_GWEI", "1000", Node,
			"highest max fee per gas keeper will pay",
			&c.EVM.FeeCeilingGwei},
		{"evm-no-tip", "KEEPER_EVM_NO_TIP", "false", Node,
			"true: priority fee 0 and max fee twice the node's base fee (EtherLink's sequencer ignores " +
				"tips; etherlink presets: true); false: tip from eth_maxPriorityFeePerGas, max fee 2 × base " +
				"fee + tip",
			&c.EVM.NoTip},
		{"evm-block-ms", "KEEPER_EVM_BLOCK_MS", "0", Node,
			"the chain's block time: an anchor without receipt that the node no longer knows " +
				"(eth_getTransactionByHash null) 10 blocks after it was signed is re-signed on the same nonce " +
				"at the current price (etherlink presets: 500, so 5 s); 0: only after KEEPER_EVM_RESUBMIT_MS",
			msKnob{&c.EVM.BlockTime}},
		{"evm-finality-stall-ms", "KEEPER_EVM_FINALITY_STALL_MS", "1800000", Node,
			"a `finalized` block that has not moved for this long while `latest` has fails /readyz and " +
				"sets keeper_chain_finalized_stalled (etherlink presets: 600000, 10 minutes)",
			msKnob{&c.EVM.FinalityStall}},
	}
}
