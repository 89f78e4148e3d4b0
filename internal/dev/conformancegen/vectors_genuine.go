package main

import (
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/conformance"
)

// The names of the genuine vectors others are controlled by.
const (
	vBoth        = "v3-both-chains"
	vEVM         = "v3-etherlink"
	vSol         = "v3-solana"
	vTLog        = "v3-both-chains-tlog-proof"
	vFile        = "v3-with-file"
	vTwo         = "v3-two-endpoints-per-chain"
	vV1          = "v1-etherlink-pre-log"
	vLone        = "v1-etherlink-pre-log-batch-of-one"
	vV2          = "v2-solana-pre-log"
	vBatchCkpt   = "v3-batch-and-checkpoint"
	vTestnet     = "v3-testnet"
	vSignedRoot  = "v3-signed-trust-root"
	vUpdate      = "v3-trust-update-extends"
	classGenuine = "genuine"
)

// Endpoints of the genuine receipts, made afresh for each vector so that a
// vector can change what one answers.
func (w *world) evm1(txs ...*evmTx) []*endpoint {
	return []*endpoint{evmNode("etherlink-1", etherlink, txs...)}
}

func (w *world) sol1(txs ...*solTx) []*endpoint {
	return []*endpoint{solNode("solana-1", solMainnet, txs...)}
}

// signedRoot is root signed by the log's key, as /log/trust serves it.
func (w *world) signedRoot(root trust.Root) string {
	note, err := trust.Sign(root, w.log.signer)
	if err != nil {
		panic("sign the trust root with its own key: " + err.Error()) // the root names the signer's key: cannot fail
	}
	return string(note)
}

// extendedRoot is the main root and keeper's next EtherLink account, from
// size 9, the size after the log's largest checkpoint.
func (w *world) extendedRoot() trust.Root {
	next := account(etherlink.network(), "etherlink", crypto.PubkeyToAddress(w.nextEVM.PublicKey).Hex(), 9)
	next.ValidFor.Start = at("2026-02-15T00:00:00Z")
	r := w.mainRoot()
	r.Accounts = append(r.Accounts, next)
	return r
}

func (w *world) genuine(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	testnetRoot := w.mainRoot()
	testnetRoot.Accounts = append(testnetRoot.Accounts, w.keeperEVMOn(testnet))
	return []spec{
		{name: vBoth, class: classGenuine, receipt: jsonText(rs.both), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "A version 3 receipt of the log's entry 2, anchored by keeper's accounts on EtherLink mainnet (the checkpoint of size 5) and on Solana mainnet-beta (the checkpoint of size 8, the receipt's); existed_by is the EtherLink anchor's block time, the earlier."},
		{name: vEVM, class: classGenuine, receipt: jsonText(rs.evm), etherlink: w.evm1(e.ckpt5),
			description: "A version 3 receipt whose one anchor is keeper's EtherLink mainnet anchor of the checkpoint of size 5, the receipt's checkpoint (empty consistency proof)."},
		{name: vSol, class: classGenuine, receipt: jsonText(rs.sol), solana: w.sol1(s.ckpt8),
			description: "A version 3 receipt whose one anchor is keeper's Solana mainnet-beta anchor of the checkpoint of size 8, a memo keeper:v3:<key hash>:8:<root>:42 (its batch id last)."},
		{name: vTLog, class: classGenuine, receipt: tlogText(rs.both), format: conformance.FormatTLogProof, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains written as a C2SP tlog-proof: the index, the inclusion proof and the signed checkpoint in the proof's lines, the rest of the receipt in its base64 extra data."},
		{name: vFile, class: classGenuine, receipt: jsonText(rs.both), file: w.file, etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains given with the original file, whose SHA-256 is the receipt's digest."},
		{name: vTwo, class: classGenuine, receipt: jsonText(rs.both),
			etherlink:   []*endpoint{evmNode("etherlink-1", etherlink, e.ckpt5), evmNode("etherlink-2", etherlink, e.ckpt5)},
			solana:      []*endpoint{solNode("solana-1", solMainnet, s.ckpt8), solNode("solana-2", solMainnet, s.ckpt8)},
			description: "v3-both-chains asked of two endpoints per chain, which answer alike."},
		{name: vV1, class: classGenuine, receipt: jsonText(rs.v1), etherlink: w.evm1(e.v1Batch),
			description: "A version 1 receipt of leaf 1 of a batch of four unsalted digests, whose root keeper's EtherLink account anchored (calldata keeper:v1: ‖ root) on 2025-12-15, before the log began."},
		{name: vLone, class: classGenuine, receipt: jsonText(rs.lone), etherlink: w.evm1(e.lone),
			description: "A version 1 receipt of a batch of one digest, anchored by keeper's EtherLink account as calldata keeper:v1: ‖ SHA-256(0x00 ‖ digest) on 2025-12-16, before the log began; the digest is in no log entry."},
		{name: vV2, class: classGenuine, receipt: jsonText(rs.v2), solana: w.sol1(s.v2Batch),
			description: "A version 2 receipt of leaf 0 (salt ‖ digest) of a batch of three, whose root keeper's Solana account anchored as the memo keeper:v1:<root hex> on 2025-12-17, before the log began."},
		{name: vBatchCkpt, class: classGenuine, receipt: jsonText(rs.batchAndCkpt), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.v2Batch),
			description: "A version 3 receipt of the log's entry 0, an evidence anchored first in a batch on Solana on 2025-12-17 (a kind batch anchor, before the log began) and then in the EtherLink anchor of the checkpoint of size 5; existed_by is the batch anchor's block time."},
		{name: vTestnet, class: classGenuine, receipt: jsonText(rs.testnet), trust: string(testnetRoot.Marshal()),
			etherlink:   []*endpoint{evmNode("etherlink-1", testnet, e.testnetCkpt5)},
			description: "A version 3 receipt anchored on a test network (eip155:7038309, the chain id of keeper dev's local EVM chain) by keeper's account, which the root lists there: it verifies, and with no trusted clock on that network the verifier states no bound."},
		{name: "v3-testnet-trusted-clock", class: classGenuine, receipt: jsonText(rs.testnet), trust: string(testnetRoot.Marshal()), clocks: []string{testnet.network()},
			etherlink:   []*endpoint{evmNode("etherlink-1", testnet, e.testnetCkpt5)},
			description: "v3-testnet with eip155:7038309 among the verifier's clocks: the bound is the test network anchor's block time."},
		{name: vSignedRoot, class: classGenuine, receipt: jsonText(rs.both), trust: w.signedRoot(w.mainRoot()), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains with the trust root pinned as the note signed by the log's key that /log/trust serves."},
		{name: vUpdate, class: classGenuine, receipt: jsonText(rs.both), update: w.signedRoot(w.extendedRoot()), etherlink: w.evm1(e.ckpt5), solana: w.sol1(s.ckpt8),
			description: "v3-both-chains with a trust update, signed by the log's key, that keeps every account of the pinned root and adds keeper's next EtherLink account from size 9, the size after the log's largest checkpoint."},
		{name: "v3-etherlink-legacy-eip155", class: classGenuine, receipt: jsonText(rs.legacy), etherlink: w.evm1(e.legacy155),
			description: "v3-etherlink's checkpoint anchored instead by keeper's account in a legacy (type 0) transaction replay-protected by EIP-155 for chain id 42793 (v = 2·42793 + 35 + y parity), which a verifier rebuilds, rehashes and recovers like the EIP-1559 ones."},
	}
}

func (w *world) clocks(rs receipts) []spec {
	e, s := &w.evm, &w.sol
	const class = "clocks"
	testnetRoot, ownRoot, devnetRoot := w.mainRoot(), w.mainRoot(), w.mainRoot()
	testnetRoot.Accounts = append(testnetRoot.Accounts, w.keeperEVMOn(testnet))
	ownRoot.Accounts = append(ownRoot.Accounts, w.keeperEVMOn(ownChain))
	devnetRoot.Accounts = append(devnetRoot.Accounts, w.keeperSolOn(solDevnet))
	return []spec{
		{name: "clock-operator-own-chain", class: class, control: vTestnet, receipt: jsonText(rs.ownChain), trust: string(ownRoot.Marshal()),
			etherlink:   []*endpoint{evmNode("etherlink-1", ownChain, e.ownChainCkpt5)},
			description: "v3-testnet anchored instead on a chain the operator runs itself (eip155:31337), which the operator's trust root lists there: a root names accounts, not clocks, so it verifies with no bound."},
		{name: "clock-solana-devnet", class: class, control: vSol, receipt: jsonText(rs.devnet), trust: string(devnetRoot.Marshal()),
			solana:      []*endpoint{solNode("solana-1", solDevnet, s.devnetCkpt8)},
			description: "v3-solana anchored instead on Solana devnet by keeper's account, which the root lists there: it verifies, and devnet's clock is not trusted, so no bound."},
		{name: "clock-untrusted-anchor-earlier", class: class, control: vBoth, receipt: jsonText(rs.mixed), trust: string(testnetRoot.Marshal()),
			etherlink: []*endpoint{evmNode("etherlink-1", testnet, e.testnetCkpt5)}, solana: w.sol1(s.ckpt8),
			description: "v3-both-chains with its EtherLink anchor on a test network (listed in the root) instead of mainnet: its existed_by is that anchor's time, but the bound stated is the later Solana anchor's, the earliest on a trusted clock."},
		{name: "clock-trusts-another-network", class: class, control: vTestnet, receipt: jsonText(rs.testnet), trust: string(testnetRoot.Marshal()),
			clocks:      []string{"eip155:128123"},
			etherlink:   []*endpoint{evmNode("etherlink-1", testnet, e.testnetCkpt5)},
			description: "v3-testnet with the verifier trusting the clock of another network (eip155:128123) than the anchor's: still no bound."},
	}
}
