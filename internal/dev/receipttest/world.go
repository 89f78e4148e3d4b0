package receipttest

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/receipt"
)

// World is a version 3 receipt anchored for real: an evidence at index 3
// of a 10-entry log, its checkpoint of size 6 anchored on a local EVM chain
// and of size 10 on a local Solana devnet, both by keeper's accounts; and
// beside it the transactions a forger could point at: the same payloads
// sent by other accounts, a payload naming another log key, and a fork of
// the EVM chain where the anchor landed in another block.
type World struct {
	Log     *Log
	File    string // the evidence's content
	Receipt []byte // the genuine receipt, as keeper hands it out (JSON)
	// EVMURL and SolanaURL are the chains' JSON-RPC endpoints; ForkURL is
	// another node of the EVM chain, on a fork.
	EVMURL, ForkURL, SolanaURL string
	// Keeper and Intruder are EVM accounts: the one that anchored and
	// another, funded. KeeperKey is Keeper's key, to anchor more, and
	// IntruderKey the other's.
	Keeper, Intruder       common.Address
	KeeperKey, IntruderKey *ecdsa.PrivateKey
	// SolanaKeeper and SolanaIntruder are the Solana fee payers (base58):
	// the one that anchored and another, funded.
	SolanaKeeper, SolanaIntruder string
	// Transactions a forged receipt could name instead of the genuine ones:
	// the same payloads sent by other accounts (EVM, Solana), and a payload
	// naming another log key sent by keeper's account.
	EVMByIntruder, SolanaByIntruder, EVMOtherKey string
	// EVMByIntruderRow and SolanaByIntruderRow are those anchors as the
	// chains state them (block, hash, time, sender).
	EVMByIntruderRow, SolanaByIntruderRow receipt.AnchorRow
}

// Origin is World's log origin.
const Origin = "keeper.test/log"

// NewWorld starts the chains (stopped when the test ends) and anchors.
func NewWorld(t testing.TB) *World {
	t.Helper()
	w := &World{File: "the signed contract"}
	digest, salt := sha256.Sum256([]byte(w.File)), []byte("sixteen byte slt")
	w.fillLog(t, evlog.EntryOf(salt, digest))
	ref6, err := w.Log.Ref(6)
	require.NoError(t, err)
	ref10, err := w.Log.Ref(10)
	require.NoError(t, err)

	intruderKey, err := crypto.GenerateKey()
	require.NoError(t, err)
	w.IntruderKey = intruderKey
	w.Intruder = crypto.PubkeyToAddress(intruderKey.PublicKey)
	dir := t.TempDir()
	evm := startEVM(t, dir, w.Intruder)
	w.EVMURL = evm.URL()
	w.KeeperKey, err = crypto.LoadECDSA(evm.KeyFile())
	require.NoError(t, err)
	w.Keeper = crypto.PubkeyToAddress(w.KeeperKey.PublicKey)
	sol, err := devnet.Start(t.Context(), devnet.Options{SlotTime: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(sol.Stop)
	w.SolanaURL = sol.URL()
	w.SolanaKeeper = sol.Payer().PublicKey().String()

	// keeper's anchors, and its receipt.
	anchorTx, err := SignEVM(w.KeeperKey, evm.ChainID(), 0, receipt.EVMCheckpointCalldata(ref6))
	require.NoError(t, err)
	onEVM, err := SendEVM(t.Context(), w.EVMURL, anchorTx)
	require.NoError(t, err)
	onEVM.LogSize, onEVM.Root = 6, ref6.Root
	onSol, err := AnchorSolana(t.Context(), w.SolanaURL, sol.Payer(), receipt.SolanaCheckpointMemo(ref10))
	require.NoError(t, err)
	onSol.LogSize, onSol.Root = 10, ref10.Root
	r, err := receipt.Build(t.Context(), receipt.Rows{EvidenceID: "ev_v3", Digest: digest, Salt: salt, LogIndex: 3, InLog: true,
		LogOrigin: Origin, LogKey: w.Log.VKey, Anchors: []receipt.AnchorRow{onEVM, onSol}, Checkpoints: w.Log.Checkpoints()}, w.Log)
	require.NoError(t, err)
	w.Receipt, err = json.Marshal(r)
	require.NoError(t, err)

	w.forge(t, intruderKey, sol, ref6, ref10)
	// A fork: another node of the same chain (same genesis, same keeper
	// key) where the intruder moved first, so keeper's very transaction
	// sits in a block with another hash.
	fork := startEVM(t, dir, w.Intruder)
	w.ForkURL = fork.URL()
	_, err = AnchorEVM(t.Context(), w.ForkURL, intruderKey, receipt.EVMCalldata(sha256.Sum256([]byte("first on the fork"))))
	require.NoError(t, err)
	_, err = SendEVM(t.Context(), w.ForkURL, anchorTx)
	require.NoError(t, err)
	return w
}

// fillLog makes a log of 10 entries, entry 3 the evidence's, with
// checkpoints of sizes 6 and 10.
func (w *World) fillLog(t testing.TB, evidence [32]byte) {
	var err error
	w.Log, err = NewLog(Origin)
	require.NoError(t, err)
	for i := range 10 {
		entry := sha256.Sum256(fmt.Appendf(nil, "another client's entry %d", i))
		if i == 3 {
			entry = evidence
		}
		_, err := w.Log.Append(entry)
		require.NoError(t, err)
	}
	for _, size := range []uint64{6, 10} {
		_, err := w.Log.Checkpoint(size)
		require.NoError(t, err)
	}
}

// forge sends what a forger has: the same payloads from other accounts, and
// a payload of another log's checkpoint from keeper's account.
func (w *World) forge(t testing.TB, intruderKey *ecdsa.PrivateKey, sol *devnet.Devnet, ref6, ref10 receipt.CheckpointRef) {
	ctx := t.Context()
	byIntruder, err := AnchorEVM(ctx, w.EVMURL, intruderKey, receipt.EVMCheckpointCalldata(ref6))
	require.NoError(t, err)
	w.EVMByIntruder, w.EVMByIntruderRow = byIntruder.TxRef, byIntruder
	otherKey := ref6
	otherKey.KeyHash ^= 1
	withOtherKey, err := AnchorEVM(ctx, w.EVMURL, w.KeeperKey, receipt.EVMCheckpointCalldata(otherKey))
	require.NoError(t, err)
	w.EVMOtherKey = withOtherKey.TxRef
	solIntruder, err := sol.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)
	solByIntruder, err := AnchorSolana(ctx, w.SolanaURL, solIntruder, receipt.SolanaCheckpointMemo(ref10))
	require.NoError(t, err)
	w.SolanaByIntruder, w.SolanaByIntruderRow = solByIntruder.TxRef, solByIntruder
	w.SolanaIntruder = solIntruder.PublicKey().String()
}

func startEVM(t testing.TB, dir string, fund ...common.Address) *devchain.Chain {
	t.Helper()
	c, err := devchain.Start(t.Context(), devchain.Options{Dir: dir, BlockTime: 50 * time.Millisecond, FinalityDepth: 3, Fund: fund})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
