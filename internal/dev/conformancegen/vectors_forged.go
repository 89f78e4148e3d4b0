package main

import (
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// fieldForgeries change one field of a genuine receipt; the chains answer
// as for the genuine one.
func (w *world) fieldForgeries(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	intruder := crypto.PubkeyToAddress(w.intruderEVM.PublicKey).Hex()
	// A node answers about any block: the one after the anchor's is empty.
	nextBlock := etherlink.emptyBlock(e.ckpt5.header.Number.Uint64()+1, e.ckpt5.rowTime().Add(time.Second), "")
	anotherKey, err := w.otherKey.Sign(evlog.Checkpoint{Origin: origin, Size: 8, Root: w.ref8.Root})
	if err != nil {
		panic("sign a checkpoint with another key of the same origin: " + err.Error()) // the signer's own origin: cannot fail
	}
	both := func(name, class, check, description string, change func(*receipt.Receipt)) spec {
		return spec{name: name, class: class, control: vBoth, check: check, description: description,
			receipt: jsonText(forged(rs.both, change)), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8)}
	}
	out := []spec{
		both("block-time-plus-one-second", "forged-time", checkTime,
			"v3-both-chains with the EtherLink anchor's block_time one second later than its block's timestamp.",
			func(r *receipt.Receipt) { r.Anchors[0].BlockTime = r.Anchors[0].BlockTime.Add(time.Second) }),
		both("existed-by-a-day-earlier", "forged-time", checkTime,
			"v3-both-chains with existed_by a day earlier than its earliest anchor's block time; every anchor is genuine.",
			func(r *receipt.Receipt) { r.ExistedBy = r.ExistedBy.Add(-24 * time.Hour) }),
		both("account-changed", "forged-account", checkAccount,
			"v3-both-chains with the EtherLink anchor's account changed to another address; the transaction's signature recovers keeper's.",
			func(r *receipt.Receipt) { r.Anchors[0].Account = intruder }),
		both("network-changed", "forged-network", checkNetwork,
			"v3-both-chains with the EtherLink anchor's network changed to eip155:1; its endpoint is on eip155:42793.",
			func(r *receipt.Receipt) { r.Anchors[0].Network = "eip155:1" }),
		both("block-hash-changed", "forged-block", checkBlock,
			"v3-both-chains with the last hex digit of the EtherLink anchor's block_hash changed.",
			func(r *receipt.Receipt) { r.Anchors[0].BlockHash = flipHex(r.Anchors[0].BlockHash) }),
		both("tree-size-below-index", "forged-tree", checkSize,
			"v3-both-chains with the EtherLink anchor's tree_size 2, a tree that cannot hold the receipt's log index 2 (the size check comes before consistency).",
			func(r *receipt.Receipt) { r.Anchors[0].TreeSize = 2 }),
		both("tree-size-changed", "forged-tree", checkConsistency,
			"v3-both-chains with the EtherLink anchor's tree_size 6 instead of 5: its consistency proof no longer leads to the receipt's checkpoint.",
			func(r *receipt.Receipt) { r.Anchors[0].TreeSize = 6 }),
		both("anchor-root-changed", "forged-tree", checkConsistency,
			"v3-both-chains with the last hex digit of the EtherLink anchor's root changed: the consistency proof fails before any chain is asked.",
			func(r *receipt.Receipt) { r.Anchors[0].Root = flipHex(r.Anchors[0].Root) }),
		both("inclusion-path-byte-changed", "forged-inclusion", checkInclusion,
			"v3-both-chains with the last hex digit of the first hash of the log inclusion proof changed.",
			func(r *receipt.Receipt) { r.Log.Inclusion[0] = flipHex(r.Log.Inclusion[0]) }),
		both("checkpoint-signature-byte-changed", "forged-checkpoint", checkCheckpoint,
			"v3-both-chains with one byte of the signature on the receipt's checkpoint changed.",
			func(r *receipt.Receipt) { r.Log.Checkpoint = flipSignature(r.Log.Checkpoint) }),
		both("checkpoint-signed-by-another-key", "forged-checkpoint", checkCheckpoint,
			"v3-both-chains with its checkpoint (same origin, size and root) signed by another key than the pinned one.",
			func(r *receipt.Receipt) { r.Log.Checkpoint = string(anotherKey) }),
		both("tx-ref-of-another-keeper-transaction", "forged-tx-ref", checkPayload,
			"v3-both-chains with the EtherLink anchor's tx_ref naming keeper's own later anchor of the checkpoint of size 8 (the node knows both): the transaction verifies, but its payload is not the anchor's, and the payload check comes before the block's.",
			func(r *receipt.Receipt) { r.Anchors[0].TxRef = e.ckpt8.tx.Hash().Hex() }),
	}
	out[len(out)-1].etherlink = w.evm1(e.ckpt5, e.ckpt8)
	blockNumber := both("block-number-changed", "forged-block", checkBlock,
		"v3-both-chains with the EtherLink anchor's block number one more than its transaction's block (a block the node also serves).",
		func(r *receipt.Receipt) { r.Anchors[0].Block++ })
	blockNumber.etherlink[0].calls = append(blockNumber.etherlink[0].calls, nextBlock)
	out = append(out, blockNumber)

	return append(out,
		spec{name: "file-does-not-match-digest", class: "wrong-file", control: vFile, check: checkDigest,
			receipt: jsonText(rs.both), file: []byte("The signed contract, version 2.\n"), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-with-file given another file than the one whose digest the receipt holds."},
		spec{name: "v1-path-byte-changed", class: "forged-batch-proof", control: vV1, check: checkProof,
			receipt:     jsonText(forged(rs.v1, func(r *receipt.Receipt) { r.Anchors[0].Path[0] = flipHex(r.Anchors[0].Path[0]) })),
			etherlink:   w.evm1(e.v1Batch),
			description: "v1-etherlink-pre-log with the last hex digit of the first hash of its batch path changed."},
		spec{name: "v2-leaf-index-changed", class: "forged-batch-proof", control: vV2, check: checkProof,
			receipt:     jsonText(forged(rs.v2, func(r *receipt.Receipt) { r.Anchors[0].LeafIndex = 1 })),
			solana:      w.sol1(s.v2Batch),
			description: "v2-solana-pre-log with leaf_index 1 instead of 0: the path does not lead from there to the root."},
		spec{name: "anchor-on-unknown-chain", class: "unknown-chain", control: vEVM, check: checkChain,
			receipt:     jsonText(forged(rs.evm, func(r *receipt.Receipt) { r.Anchors[0].Chain = "ethereum" })),
			etherlink:   w.evm1(e.ckpt5),
			description: "v3-etherlink with the anchor's chain named ethereum, a chain the verifier does not know and has no endpoint for."},
		spec{name: "no-endpoint-for-chain", class: "unknown-chain", control: vBoth, check: checkChain,
			receipt: jsonText(rs.both), etherlink: w.evm1(e.ckpt5),
			description: "v3-both-chains checked with no Solana endpoint: the Solana anchor cannot be read, and a verifier may not skip it."},
	)
}

// rowTime is the block time of the transaction's block.
func (x *evmTx) rowTime() time.Time { return x.row().BlockTime }
