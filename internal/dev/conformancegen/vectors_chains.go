package main

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/keeperhq/keeper/receipt"
)

// evmVectors are what EtherLink nodes answer that a verifier must not
// take: transactions that are not the anchor's or not replay-protected,
// headers that do not rehash, nodes on another chain or behind.
func (w *world) evmVectors(rs receipts) []spec {
	e := &w.evm
	hash, number := e.ckpt5.tx.Hash().Hex(), hexutil.EncodeUint64(e.ckpt5.header.Number.Uint64())
	evm := func(name, class, check, description string, r receipt.Receipt, node *endpoint) spec {
		return spec{name: name, class: class, control: vEVM, check: check, description: description,
			receipt: jsonText(r), etherlink: []*endpoint{node}}
	}
	node := func(txs ...*evmTx) *endpoint { return evmNode("etherlink-1", etherlink, txs...) }
	reorg := etherlink.include(e.ckpt5.tx, e.ckpt5.from, e.ckpt5.rowTime(), 1, "reorg")
	behind := etherlink.header(e.ckpt5.header.Number.Uint64()-1, e.ckpt5.rowTime().Add(-time.Second), "")
	withoutAccount := evm("v3-anchor-without-account", "missing-account", checkAccount,
		"v3-etherlink with the account key removed from its checkpoint anchor: a version 3 checkpoint anchor must name the account that sent it.",
		rs.evm, node(e.ckpt5))
	withoutAccount.receipt = removeLine(withoutAccount.receipt, `      "account": `)
	return []spec{
		withoutAccount,
		evm("evm-signed-for-chain-id-1", "evm-transaction", checkTransaction,
			"v3-etherlink naming a transaction of keeper's account signed for chain id 1, carrying the genuine calldata, that an EtherLink node answers as its own: it is not signed for the anchor's network.",
			swapped(rs.evm, 0, e.chainOne.row()), node(e.chainOne)),
		evm("evm-unprotected-legacy", "evm-transaction", checkTransaction,
			"v3-etherlink naming a legacy transaction of keeper's account (v = 27 or 28) carrying the genuine calldata: without EIP-155 it could be replayed on any chain.",
			swapped(rs.evm, 0, e.unprotected.row()), node(e.unprotected)),
		evm("evm-node-changes-input", "evm-transaction", checkTransaction,
			"v3-etherlink through a node that answers the transaction with its input replaced by the calldata of the checkpoint of size 8, and its hash field unchanged: rebuilt, it no longer hashes to tx_ref.",
			rs.evm, node(e.ckpt5).edit("eth_getTransactionByHash", hash, func(m map[string]any) {
				m["input"] = hexutil.Encode(receipt.EVMCheckpointCalldata(w.ref8))
			})),
		evm("evm-node-answers-another-transaction", "evm-transaction", checkTransaction,
			"v3-etherlink through a node that answers tx_ref with keeper's anchor of the checkpoint of size 8, another transaction of the same account.",
			rs.evm, node(e.ckpt5).answer("eth_getTransactionByHash", hash, e.ckpt8.txJSON())),
		evm("evm-transaction-not-found", "evm-transaction", checkTransaction,
			"v3-etherlink through a node that knows neither the transaction nor its receipt (both answered null).",
			rs.evm, node(e.ckpt5).answer("eth_getTransactionByHash", hash, nil).answer("eth_getTransactionReceipt", hash, nil)),
		evm("evm-header-timestamp-changed", "evm-header", checkBlock,
			"v3-etherlink through a node whose header of the anchor's block has its timestamp an hour later and its hash field unchanged: the fields no longer rehash to block_hash.",
			rs.evm, node(e.ckpt5).edit("eth_getBlockByNumber", number, func(m map[string]any) {
				m["timestamp"] = hexutil.EncodeUint64(e.ckpt5.header.Time + 3600)
			})),
		evm("evm-block-reorganised", "evm-header", checkFinality,
			"v3-etherlink through a node whose block at the anchor's number is another block (its header rehashes to its own hash), while the transaction's receipt still names block_hash.",
			rs.evm, node(e.ckpt5).answer("eth_getBlockByNumber", number, blockJSON(reorg.header, reorg.tx))),
		evm("etherlink-node-on-another-chain", "node-network", checkNetwork,
			"v3-etherlink through a node whose eth_chainId is 0x1 (Ethereum mainnet), not the anchor's 42793; it answers the transaction as the EtherLink node does.",
			rs.evm, node(e.ckpt5).answer("eth_chainId", nil, "0x1")),
		evm("evm-reverted", "reverted", checkStatus,
			"v3-etherlink naming a transaction of keeper's account carrying the genuine calldata whose receipt has status 0x0 (reverted).",
			swapped(rs.evm, 0, e.reverted.row()), node(e.reverted)),
		evm("evm-not-final", "not-final", checkFinality,
			"v3-etherlink through a node whose finalized block is the one before the anchor's block.",
			rs.evm, node(e.ckpt5).answer("eth_getBlockByNumber", "finalized", blockJSON(behind))),
		evm("evm-resent-by-another-account", "resent-payload", checkAccount,
			"v3-etherlink naming the genuine calldata sent again by an account the root does not list, with the anchor's account, block and time changed to match.",
			swapped(rs.evm, 0, e.intruderCkpt5.row()), node(e.intruderCkpt5)),
		evm("evm-resent-by-another-account-naming-keeper", "resent-payload", checkAccount,
			"v3-etherlink naming the genuine calldata sent again by an account the root does not list, with the anchor's account still keeper's.",
			forged(swapped(rs.evm, 0, e.intruderCkpt5.row()), func(r *receipt.Receipt) { r.Anchors[0].Account = e.ckpt5.row().Account }),
			node(e.intruderCkpt5)),
	}
}

// solanaVectors are what Solana nodes answer that a verifier must not
// take.
func (w *world) solanaVectors(rs receipts) []spec {
	s := &w.sol
	sig, slot := s.ckpt8.signature(), s.ckpt8.slot
	sol := func(name, class, check, description string, r receipt.Receipt, node *endpoint) spec {
		return spec{name: name, class: class, control: vSol, check: check, description: description,
			receipt: jsonText(r), solana: []*endpoint{node}}
	}
	node := func(txs ...*solTx) *endpoint { return solNode("solana-1", solMainnet, txs...) }
	truncated := []string{base64.StdEncoding.EncodeToString(s.ckpt8.wire[:len(s.ckpt8.wire)-1]), "base64"}
	return []spec{
		sol("solana-not-found-at-finalized", "solana-transaction", checkTransaction,
			"v3-solana through a node that answers getTransaction at finalized with null, as for a transaction not yet finalized or unknown.",
			rs.sol, node(s.ckpt8).answer("getTransaction", sig, nil)),
		sol("solana-truncated-wire", "solana-transaction", checkTransaction,
			"v3-solana through a node that answers the transaction's wire bytes without their last byte.",
			rs.sol, node(s.ckpt8).edit("getTransaction", sig, func(m map[string]any) { m["transaction"] = truncated })),
		sol("solana-cosigner-signature-invalid", "solana-transaction", checkTransaction,
			"v3-solana naming a transaction paid and signed by keeper's account with the genuine memo, whose second required signer's signature does not verify.",
			swapped(rs.sol, 0, s.badCosigner.row()), node(s.badCosigner)),
		sol("solana-node-answers-another-transaction", "solana-transaction", checkTransaction,
			"v3-solana through a node that answers the signature with another account's transaction carrying the same memo, whose first signature is not tx_ref.",
			rs.sol, node(s.ckpt8).answer("getTransaction", sig, s.intruderCkpt8.transactionJSON())),
		sol("solana-block-without-signature", "solana-block", checkBlock,
			"v3-solana through a node whose block at the anchor's slot does not list the transaction's signature.",
			rs.sol, node(s.ckpt8).edit("getBlock", slot, func(m map[string]any) {
				m["signatures"] = []any{m["signatures"].([]any)[0], m["signatures"].([]any)[2]}
			})),
		sol("solana-node-on-another-cluster", "node-network", checkNetwork,
			"v3-solana through a node whose genesis hash is devnet's, not mainnet-beta's; it answers the transaction as the mainnet node does.",
			rs.sol, node(s.ckpt8).answer("getGenesisHash", nil, solDevnet.genesis)),
		sol("solana-failed", "reverted", checkStatus,
			"v3-solana naming a transaction of keeper's account carrying the genuine memo that failed (meta.err an instruction error).",
			swapped(rs.sol, 0, s.failed.row()), node(s.failed)),
		sol("solana-resent-by-another-fee-payer", "resent-payload", checkAccount,
			"v3-solana naming the genuine memo sent again by a fee payer the root does not list, with the anchor's account, slot and time changed to match.",
			swapped(rs.sol, 0, s.intruderCkpt8.row()), node(s.intruderCkpt8)),
	}
}

// disagreeing are two endpoints of one chain that do not say the same.
func (w *world) disagreeing(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	solana2 := solNode("solana-2", solMainnet, s.ckpt8)
	later := func(m map[string]any) {
		t, err := m["blockTime"].(json.Number).Int64()
		if err != nil {
			panic("a blockTime that is not an integer")
		}
		m["blockTime"] = t + 1
	}
	solana2.edit("getTransaction", s.ckpt8.signature(), later).edit("getBlock", s.ckpt8.slot, later)
	// On the other history the anchor's block number holds an empty block.
	etherlink2 := evmNode("etherlink-2", etherlink, e.ckpt5OnFork)
	etherlink2.calls = append(etherlink2.calls, etherlink.emptyBlock(e.ckpt5.header.Number.Uint64(), e.ckpt5.rowTime(), "fork"))
	return []spec{
		{name: "solana-endpoints-disagree-on-block-time", class: "endpoints-disagree", control: vTwo, check: checkEndpoints,
			receipt: jsonText(rs.both), etherlink: []*endpoint{evmNode("etherlink-1", etherlink, e.ckpt5), evmNode("etherlink-2", etherlink, e.ckpt5)},
			solana:      []*endpoint{solNode("solana-1", solMainnet, s.ckpt8), solana2},
			description: "v3-two-endpoints-per-chain with the second Solana endpoint stating a block time one second later for the transaction and its block."},
		{name: "etherlink-endpoints-disagree-on-block", class: "endpoints-disagree", control: vTwo, check: checkEndpoints,
			receipt: jsonText(rs.both), etherlink: []*endpoint{evmNode("etherlink-1", etherlink, e.ckpt5), etherlink2},
			solana:      []*endpoint{solNode("solana-1", solMainnet, s.ckpt8), solNode("solana-2", solMainnet, s.ckpt8)},
			description: "v3-two-endpoints-per-chain with the second EtherLink endpoint on another history, where the same signed transaction sits in a later block with another hash (each header rehashes)."},
	}
}

// logVectors are anchors keeper's own accounts sent that a verifier or the
// audit must catch: of a fork of the log, of another key, of a size the
// root does not list the account for.
func (w *world) logVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	next := crypto.PubkeyToAddress(w.nextEVM.PublicKey).Hex()
	rotated := w.mainRoot()
	end, endTime := uint64(4), at("2026-02-20T00:00:00Z")
	rotated.Accounts[0].Sizes.End, rotated.Accounts[0].ValidFor.End = &end, &endTime
	successor := account(etherlink.network(), "etherlink", next, 4)
	successor.ValidFor.Start = endTime
	rotated.Accounts = append(rotated.Accounts, successor)
	forkAnchor := forged(swapped(rs.both, 0, e.forkCkpt5.row()), func(r *receipt.Receipt) {
		r.Anchors[0].Root = hexRoot(w.fork5.Root)
	})
	return []spec{
		{name: "checkpoint-size-outside-account-range", class: "size-range", control: vEVM, check: checkAccount, audit: findingAccount,
			receipt: jsonText(rs.evm), trust: string(rotated.Marshal()), etherlink: w.evm1(e.ckpt5),
			description: "v3-etherlink pinned with a root that lists keeper's EtherLink account for sizes [0, 4) only (its key retired, a successor listed from 4): its anchor of the checkpoint of size 5 is outside them."},
		{name: "fork-anchor-in-genuine-receipt", class: "fork", control: vBoth, check: checkConsistency, audit: findingFork,
			receipt: jsonText(forkAnchor), etherlink: w.evm1(e.forkCkpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains whose EtherLink anchor names keeper's own anchor of a checkpoint of size 5 with another root (a second history of the log, whose entry 3 differs): the receipt's consistency proof does not lead from that root to its checkpoint; the log serves its own checkpoint of size 5."},
		{name: "fork-receipt-from-split-view", class: "fork", control: vEVM, audit: findingFork,
			receipt: jsonText(rs.splitView), etherlink: w.evm1(e.forkCkpt5),
			description: "v3-etherlink made wholly from a second history of the log whose entry 3 differs: its checkpoint of size 5, signed by the log's key, anchored by keeper's account; every check a verifier makes passes, and only the audit, holding the log's own checkpoint of size 5, finds the fork."},
		{name: "anchor-names-another-key", class: "other-key", control: vEVM, check: checkPayload, audit: findingKey,
			receipt: jsonText(swapped(rs.evm, 0, e.otherKey.row())), etherlink: w.evm1(e.otherKey),
			description: "v3-etherlink naming a transaction of keeper's account that anchors the same size and root under another log key's hash."},
	}
}

func hexRoot(root [32]byte) string { return hexutil.Encode(root[:])[2:] }
