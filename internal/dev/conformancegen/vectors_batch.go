package main

import (
	"github.com/ethereum/go-ethereum/crypto"
)

// batchVectors are batch anchors (keeper:v1: payloads, which commit to no
// checkpoint) that must not stand: sent after the log began, or by an
// account a batch anchor may not come from.
func (w *world) batchVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	keeper, next := crypto.PubkeyToAddress(w.keeperEVM.PublicKey).Hex(), crypto.PubkeyToAddress(w.nextEVM.PublicKey).Hex()

	// keeper's EtherLink account retired on 2025-12-10, before the
	// batch's block, its successor listed from then.
	retired := w.mainRoot()
	end, endTime := uint64(1), at("2025-12-10T00:00:00Z")
	retired.Accounts[0].Sizes.End, retired.Accounts[0].ValidFor.End = &end, &endTime
	successor := account(etherlink.network(), "etherlink", next, 1)
	successor.ValidFor.Start = endTime
	retired.Accounts = append(retired.Accounts, successor)
	// keeper's EtherLink account listed only from size 3.
	late := w.root(account(etherlink.network(), "etherlink", keeper, 3), w.keeperSolOn(solMainnet))

	const after, ineligible = "batch-after-log", "batch-ineligible-account"
	return []spec{
		{name: "v1-digest-never-in-log-after-log-began", class: after, control: vLone, check: checkBatch, audit: findingBatch,
			receipt: jsonText(swapped(rs.lone, 0, e.loneLate.row())), etherlink: w.evm1(e.loneLate),
			description: "A version 1 receipt for a digest that was never in the log: keeper's listed EtherLink account sent keeper:v1: ‖ SHA-256(0x00 ‖ digest), a batch of one, on 2026-02-12, after the log began, which proves nothing about when the digest existed."},
		{name: "v2-batch-after-log-began", class: after, control: vV2, check: checkBatch, audit: findingBatch,
			receipt: jsonText(swapped(rs.v2, 0, s.v2Late.row())), solana: w.sol1(s.v2Late),
			description: "v2-solana-pre-log naming the same batch memo sent again by keeper's listed Solana account on 2026-02-12, after the log began."},
		{name: "v3-batch-anchor-after-log-began", class: after, control: vBatchCkpt, check: checkBatch, audit: findingBatch,
			receipt: jsonText(swapped(rs.batchAndCkpt, 1, s.v2Late.row())), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.v2Late),
			description: "v3-batch-and-checkpoint whose kind batch anchor names the same batch memo sent again by keeper's Solana account on 2026-02-12, after the log began; its checkpoint anchor is genuine."},
		{name: "batch-from-account-retired-before-block", class: ineligible, control: vV1, check: checkBatch, audit: findingBatch,
			receipt: jsonText(rs.v1), trust: string(retired.Marshal()), etherlink: w.evm1(e.v1Batch),
			description: "v1-etherlink-pre-log pinned with a root in which keeper's EtherLink account was retired (validFor.end 2025-12-10, sizes [0, 1)) before the batch's block of 2025-12-15, and a successor listed."},
		{name: "batch-from-account-listed-from-size-3", class: ineligible, control: vV1, check: checkBatch, audit: findingBatch,
			receipt: jsonText(rs.v1), trust: string(late.Marshal()), etherlink: w.evm1(e.v1Batch),
			description: "v1-etherlink-pre-log pinned with a root that lists keeper's EtherLink account only from size 3: an account listed after the log's start may not have anchored a batch."},
		{name: "batch-from-unlisted-account", class: "batch-unlisted-account", control: vV1, check: checkAccount,
			receipt: jsonText(swapped(rs.v1, 0, e.intruderV1.row())), etherlink: w.evm1(e.intruderV1),
			description: "v1-etherlink-pre-log naming the same batch calldata sent on 2025-12-15 by an account the root does not list (which the audit, reading only listed accounts, never sees)."},
	}
}

// payloadVectors are transactions of keeper's own accounts whose payload
// is near a valid one but not it, byte for byte.
func (w *world) payloadVectors(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	const class = "payload-bytes"
	solana := func(name, description string, x *solTx) spec {
		return spec{name: name, class: class, control: vSol, check: checkPayload, audit: findingPayload, description: description,
			receipt: jsonText(swapped(rs.sol, 0, x.row())), solana: w.sol1(x)}
	}
	return []spec{
		solana("solana-memo-leading-bom",
			"v3-solana naming a transaction of keeper's account whose memo is the genuine one after a byte-order mark (U+FEFF).", s.bom),
		solana("solana-memo-trailing-newline",
			"v3-solana naming a transaction of keeper's account whose memo is the genuine one and a newline.", s.newline),
		solana("solana-memo-upper-case-hex",
			"v3-solana naming a transaction of keeper's account whose memo spells the root in upper-case hex.", s.upperHex),
		solana("solana-memo-batch-id-zero-padded",
			"v3-solana naming a transaction of keeper's account whose memo ends in the batch id 042 instead of 42.", s.paddedBatch),
		solana("solana-two-keeper-memos",
			"v3-solana naming a transaction of keeper's account holding the genuine memo in two SPL Memo instructions: an anchor holds exactly one keeper payload.", s.twoMemos),
		{name: "evm-calldata-extra-trailing-byte", class: class, control: vEVM, check: checkPayload, audit: findingPayload,
			receipt: jsonText(swapped(rs.evm, 0, e.extraByte.row())), etherlink: w.evm1(e.extraByte),
			description: "v3-etherlink naming a transaction of keeper's account whose calldata is the genuine one followed by a zero byte."},
	}
}
