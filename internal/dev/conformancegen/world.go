package main

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	sol "github.com/gagliardetto/solana-go"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

// origin is the corpus's log.
const origin = "log.keeper.example"

var (
	// anchoringBegan is when keeper's accounts began to anchor batches.
	anchoringBegan = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	// logBegan is the root's log.validFor.start: batch anchors end here.
	logBegan = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// finalizedAt is the time of every chain's finalized block.
	finalizedAt = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
)

// The networks the corpus's transactions are on.
var (
	etherlink  = &evmChain{id: 42793, firstBlock: 8_000_000, firstTime: anchoringBegan}   // EtherLink mainnet
	testnet    = &evmChain{id: 7038309, firstBlock: 2_000_000, firstTime: anchoringBegan} // a test network: keeper dev's local EVM chain id
	ownChain   = &evmChain{id: 31337, firstBlock: 100_000, firstTime: anchoringBegan}     // a chain the operator runs itself
	solMainnet = &solCluster{genesis: "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d", firstSlot: 380_000_000, firstTime: anchoringBegan}
	solDevnet  = &solCluster{genesis: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG", firstSlot: 420_000_000, firstTime: anchoringBegan}
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(fmt.Sprintf("a fixed time %q: %v", s, err))
	}
	return t.UTC()
}

// world is everything the vectors are cut from: the log and a fork of it,
// the keys, the evidence, the batches made before the log, and every
// transaction any vector's endpoints answer about.
type world struct {
	log, fork  *memLog
	otherKey   *evlog.Signer // another key for the log's origin
	witnessKey string        // a note key (type 0x01) named as a witness's, which a cosigner's may not be
	// Witnesses a, b and c of the witnessed roots, and x, whom no root lists.
	witA, witB, witC, witX *evlog.Witness

	keeperEVM, nextEVM, intruderEVM   *ecdsa.PrivateKey // keeper's account, the one it rotates to, someone else's
	keeperSol, intruderSol, cosignerS sol.PrivateKey

	// The evidence of the version 3 receipts: entry 2 of the log.
	file   []byte
	digest [32]byte
	salt   []byte

	cp5, cp8, forkCp5 []byte // signed checkpoints of sizes 5 and 8, and the fork's of size 5
	ref5, ref8, fork5 receipt.CheckpointRef

	// Batches anchored before the log: four unsalted digests (version 1),
	// a batch of one unsalted digest, and three salted evidences (version
	// 2), the first of which the log took in later as its entry 0.
	v1Digests                [][32]byte
	loneDigest               [32]byte
	v2Digests                [][32]byte
	v2Salts                  [][]byte
	v1Root, loneRoot, v2Root [32]byte

	evm evmTxs
	sol solTxs
}

// evmTxs are the EVM transactions of the world.
type evmTxs struct {
	v1Batch, lone, ckpt5, ckpt8, loneLate, extraByte, otherKey, reverted *evmTx
	legacy155, unprotected, chainOne, forkCkpt5, ckpt5OnFork             *evmTx
	intruderV1, intruderCkpt5, testnetCkpt5, ownChainCkpt5               *evmTx
}

// solTxs are the Solana transactions of the world.
type solTxs struct {
	v2Batch, ckpt8, v2Late, bom, newline, upperHex, paddedBatch, twoMemos *solTx
	badCosigner, failed, devnetCkpt8, intruderCkpt8                       *solTx
}

func newWorld() (*world, error) {
	w := &world{file: []byte("The signed contract, version 1.\n"), salt: seed("conformance salt")[:receipt.SaltSize]}
	w.digest = sha256.Sum256(w.file)
	if err := w.keys(); err != nil {
		return nil, err
	}
	if err := w.batches(); err != nil {
		return nil, err
	}
	if err := w.logs(); err != nil {
		return nil, err
	}
	if err := w.evmTransactions(); err != nil {
		return nil, err
	}
	if err := w.solanaTransactions(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *world) keys() error {
	signer, vkey, err := noteSigner("conformance log key", origin)
	if err != nil {
		return err
	}
	w.log, w.fork = newMemLog(signer, vkey), newMemLog(signer, vkey)
	if w.otherKey, _, err = noteSigner("conformance another log key", origin); err != nil {
		return err
	}
	if _, w.witnessKey, err = noteSigner("conformance witness key", "witness.example"); err != nil {
		return err
	}
	for label, p := range map[string]**evlog.Witness{"a": &w.witA, "b": &w.witB, "c": &w.witC, "x": &w.witX} {
		if *p, err = evlog.NewWitness("witness-"+label+".example", seed("conformance witness "+label)); err != nil {
			return err
		}
	}
	for label, k := range map[string]**ecdsa.PrivateKey{
		"conformance etherlink account": &w.keeperEVM, "conformance etherlink next account": &w.nextEVM,
		"conformance etherlink intruder": &w.intruderEVM,
	} {
		if *k, err = evmKey(label); err != nil {
			return err
		}
	}
	w.keeperSol = solanaKey("conformance solana account")
	w.intruderSol = solanaKey("conformance solana intruder")
	w.cosignerS = solanaKey("conformance solana cosigner")
	return nil
}

// batches are the batches made before the log, by id: 101 (version 1,
// four digests), 102 (version 1, one) and 201 (version 2, three).
func (w *world) batches() error {
	var v1Leaves, v2Leaves []merkle.Hash
	for i := range 4 {
		d := sha256.Sum256(fmt.Appendf(nil, "Evidence %d taken in before salts.\n", i))
		w.v1Digests = append(w.v1Digests, d)
		v1Leaves = append(v1Leaves, merkle.LeafHash(d[:]))
	}
	w.loneDigest = sha256.Sum256([]byte("A file that was never put in the log.\n"))
	for i := range 3 {
		d := sha256.Sum256(fmt.Appendf(nil, "Evidence %d taken in before the log.\n", i))
		s := seed(fmt.Sprintf("conformance batch salt %d", i))[:receipt.SaltSize]
		w.v2Digests, w.v2Salts = append(w.v2Digests, d), append(w.v2Salts, s)
		v2Leaves = append(v2Leaves, merkle.LeafHash(receipt.Leaf(s, d)))
	}
	for id, leaves := range map[int64][]merkle.Hash{101: v1Leaves, 102: {merkle.LeafHash(w.loneDigest[:])}, 201: v2Leaves} {
		tree, err := merkle.FromLeafHashes(leaves)
		if err != nil {
			return fmt.Errorf("batch %d: %w", id, err)
		}
		hashes := make([][32]byte, len(leaves))
		for i, h := range leaves {
			hashes[i] = h
		}
		w.log.batches[id] = hashes
		switch id {
		case 101:
			w.v1Root = tree.Root()
		case 102:
			w.loneRoot = tree.Root()
		case 201:
			w.v2Root = tree.Root()
		}
	}
	return nil
}

// logs fills the log with eight entries (0: the first version 2
// evidence, taken in when the log began; 2: the evidence) and signs its
// checkpoints of sizes 5 and 8; and the fork, a second history under the
// same key whose entry 3 differs, with its checkpoint of size 5.
func (w *world) logs() error {
	for i := range 8 {
		entry := sha256.Sum256(fmt.Appendf(nil, "another client's entry %d", i))
		switch i {
		case 0:
			entry = evlog.EntryOf(w.v2Salts[0], w.v2Digests[0])
		case 2:
			entry = evlog.EntryOf(w.salt, w.digest)
		}
		if err := w.log.append(entry); err != nil {
			return err
		}
		if i < 5 {
			if i == 3 {
				entry = sha256.Sum256([]byte("an entry only the fork has"))
			}
			if err := w.fork.append(entry); err != nil {
				return err
			}
		}
	}
	var err error
	if w.cp5, err = w.log.checkpoint(5); err != nil {
		return err
	}
	if w.cp8, err = w.log.checkpoint(8); err != nil {
		return err
	}
	if w.forkCp5, err = w.fork.checkpoint(5); err != nil {
		return err
	}
	if w.ref5, err = w.log.ref(5); err != nil {
		return err
	}
	if w.ref8, err = w.log.ref(8); err != nil {
		return err
	}
	w.fork5, err = w.fork.ref(5)
	return err
}

// evmSend signs data from key at nonce for chain c and includes it at t.
func evmSend(c *evmChain, key *ecdsa.PrivateKey, nonce uint64, data []byte, t string) (*evmTx, error) {
	tx, err := signEVM(key, c.id, nonce, data)
	if err != nil {
		return nil, err
	}
	return c.include(tx, crypto.PubkeyToAddress(key.PublicKey), at(t), 1, ""), nil
}

// evmTransactions are the EVM transactions, each account's nonces in the
// order of time.
func (w *world) evmTransactions() error {
	ckpt5, ckpt8 := receipt.EVMCheckpointCalldata(w.ref5), receipt.EVMCheckpointCalldata(w.ref8)
	otherKey := w.ref5
	otherKey.KeyHash = w.otherKey.Key().Hash
	keeper := crypto.PubkeyToAddress(w.keeperEVM.PublicKey)
	sends := []struct {
		tx    **evmTx
		chain *evmChain
		key   *ecdsa.PrivateKey
		nonce uint64
		data  []byte
		at    string
	}{
		{&w.evm.v1Batch, etherlink, w.keeperEVM, 0, receipt.EVMCalldata(w.v1Root), "2025-12-15T10:00:00Z"},
		{&w.evm.lone, etherlink, w.keeperEVM, 1, receipt.EVMCalldata(w.loneRoot), "2025-12-16T10:00:00Z"},
		{&w.evm.ckpt5, etherlink, w.keeperEVM, 2, ckpt5, "2026-02-10T12:00:00Z"},
		{&w.evm.ckpt8, etherlink, w.keeperEVM, 3, ckpt8, "2026-02-11T12:00:00Z"},
		{&w.evm.loneLate, etherlink, w.keeperEVM, 4, receipt.EVMCalldata(w.loneRoot), "2026-02-12T10:00:00Z"},
		{&w.evm.extraByte, etherlink, w.keeperEVM, 5, append(ckpt5, 0), "2026-02-12T11:00:00Z"},
		{&w.evm.otherKey, etherlink, w.keeperEVM, 6, receipt.EVMCheckpointCalldata(otherKey), "2026-02-12T12:00:00Z"},
		{&w.evm.forkCkpt5, etherlink, w.keeperEVM, 10, receipt.EVMCheckpointCalldata(w.fork5), "2026-02-13T12:00:00Z"},
		{&w.evm.intruderV1, etherlink, w.intruderEVM, 0, receipt.EVMCalldata(w.v1Root), "2025-12-15T11:00:00Z"},
		{&w.evm.intruderCkpt5, etherlink, w.intruderEVM, 1, ckpt5, "2026-02-10T12:30:00Z"},
		{&w.evm.testnetCkpt5, testnet, w.keeperEVM, 0, ckpt5, "2026-02-10T13:00:00Z"},
		{&w.evm.ownChainCkpt5, ownChain, w.keeperEVM, 0, ckpt5, "2026-02-10T14:00:00Z"},
	}
	for _, s := range sends {
		x, err := evmSend(s.chain, s.key, s.nonce, s.data, s.at)
		if err != nil {
			return err
		}
		*s.tx = x
	}
	// The same signed anchor, in a block of another history of the chain.
	w.evm.ckpt5OnFork = etherlink.include(w.evm.ckpt5.tx, keeper, at("2026-02-10T12:00:02Z"), 1, "fork")

	reverted, err := signEVM(w.keeperEVM, etherlink.id, 7, ckpt5)
	if err != nil {
		return err
	}
	w.evm.reverted = etherlink.include(reverted, keeper, at("2026-02-12T13:00:00Z"), 0, "")
	legacy155, err := signLegacy(w.keeperEVM, types155(etherlink.id), 8, ckpt5)
	if err != nil {
		return err
	}
	w.evm.legacy155 = etherlink.include(legacy155, keeper, at("2026-02-12T14:00:00Z"), 1, "")
	unprotected, err := signLegacy(w.keeperEVM, homestead(), 9, ckpt5)
	if err != nil {
		return err
	}
	w.evm.unprotected = etherlink.include(unprotected, keeper, at("2026-02-12T15:00:00Z"), 1, "")
	// Signed for chain id 1 (its nonce there is 0), answered by a node of
	// EtherLink as if it were one of its own.
	chainOne, err := signEVM(w.keeperEVM, 1, 0, ckpt5)
	if err != nil {
		return err
	}
	w.evm.chainOne = etherlink.include(chainOne, keeper, at("2026-02-12T16:00:00Z"), 1, "")
	return nil
}

// solanaTransactions are the Solana transactions.
func (w *world) solanaTransactions() error {
	memo8 := receipt.SolanaCheckpointMemoForBatch(w.ref8, 42)
	v2Memo := receipt.SolanaMemo(w.v2Root)
	upper := fmt.Sprintf("%s%08x:%d:%X:42", receipt.PayloadPrefixCheckpoint, w.ref8.KeyHash, w.ref8.Size, w.ref8.Root)
	sends := []struct {
		tx      **solTx
		cluster *solCluster
		payer   sol.PrivateKey
		memos   []string
		at      string
		o       solanaOptions
	}{
		{&w.sol.v2Batch, solMainnet, w.keeperSol, []string{v2Memo}, "2025-12-17T10:00:00Z", solanaOptions{}},
		{&w.sol.ckpt8, solMainnet, w.keeperSol, []string{memo8}, "2026-02-11T09:30:00Z", solanaOptions{}},
		{&w.sol.intruderCkpt8, solMainnet, w.intruderSol, []string{memo8}, "2026-02-11T10:00:00Z", solanaOptions{}},
		{&w.sol.devnetCkpt8, solDevnet, w.keeperSol, []string{memo8}, "2026-02-11T10:30:00Z", solanaOptions{}},
		{&w.sol.v2Late, solMainnet, w.keeperSol, []string{v2Memo}, "2026-02-12T09:00:00Z", solanaOptions{}},
		{&w.sol.bom, solMainnet, w.keeperSol, []string{"\ufeff" + memo8}, "2026-02-12T09:10:00Z", solanaOptions{}},
		{&w.sol.newline, solMainnet, w.keeperSol, []string{memo8 + "\n"}, "2026-02-12T09:20:00Z", solanaOptions{}},
		{&w.sol.upperHex, solMainnet, w.keeperSol, []string{upper}, "2026-02-12T09:30:00Z", solanaOptions{}},
		{&w.sol.paddedBatch, solMainnet, w.keeperSol, []string{receipt.SolanaCheckpointMemo(w.ref8) + ":042"}, "2026-02-12T09:40:00Z", solanaOptions{}},
		{&w.sol.twoMemos, solMainnet, w.keeperSol, []string{memo8, memo8}, "2026-02-12T09:50:00Z", solanaOptions{}},
		{&w.sol.badCosigner, solMainnet, w.keeperSol, []string{memo8}, "2026-02-12T10:00:00Z", solanaOptions{cosigner: &w.cosignerS}},
		{&w.sol.failed, solMainnet, w.keeperSol, []string{memo8}, "2026-02-12T10:10:00Z", solanaOptions{failed: true}},
	}
	for _, s := range sends {
		x, err := s.cluster.sendMemos(s.payer, s.memos, at(s.at), s.o)
		if err != nil {
			return err
		}
		*s.tx = x
	}
	return nil
}

// account is a root's account of address on network from tree size start,
// listed since keeper began anchoring.
func account(network, chain, address string, start uint64) trust.Account {
	return trust.Account{ID: trust.CAIP10(network, address), Chain: chain, Sizes: trust.SizeRange{Start: start},
		ValidFor: trust.TimeRange{Start: anchoringBegan}}
}

func (w *world) keeperEVMOn(c *evmChain) trust.Account {
	return account(c.network(), "etherlink", crypto.PubkeyToAddress(w.keeperEVM.PublicKey).Hex(), 0)
}

func (w *world) keeperSolOn(c *solCluster) trust.Account {
	return account(c.network(), "solana", w.keeperSol.PublicKey().String(), 0)
}

// root is the log's trust root listing accounts.
func (w *world) root(accounts ...trust.Account) trust.Root {
	return trust.Root{MediaType: trust.MediaType, Log: trust.Log{Origin: origin, Key: w.log.vkey, ValidFor: trust.TimeRange{Start: logBegan}},
		Accounts: accounts}
}

// mainRoot lists keeper's two accounts on the mainnets, from size 0.
func (w *world) mainRoot() trust.Root {
	return w.root(w.keeperEVMOn(etherlink), w.keeperSolOn(solMainnet))
}
