package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/dev/devchain"
	"github.com/keeperhq/keeper/dev/devnet"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/receipttest"
	"github.com/keeperhq/keeper/receipt/verify"
)

// v3World is a version 3 receipt anchored for real: an evidence at index 3
// of a 10-entry log, its checkpoint of size 6 anchored on a local EVM chain
// and of size 10 on a local Solana devnet, both by keeper's accounts; and
// beside it the transactions a forger could point at: the same payloads
// sent by other accounts, a payload naming another log key, and a fork of
// the EVM chain where the anchor landed in another block.
type v3World struct {
	log      *receipttest.Log
	raw      []byte // the genuine receipt, as keeper hands it out
	file     string
	evmURL   string
	forkURL  string
	solURL   string
	keeper   common.Address
	intruder common.Address
	// Transactions a forged receipt could name instead of the genuine ones.
	evmByIntruder, solByIntruder, evmOtherKey string
}

const logOrigin = "keeper.test/log"

func newV3World(t *testing.T) *v3World {
	t.Helper()
	ctx := t.Context()
	w := &v3World{file: "the signed contract"}
	var err error
	w.log, err = receipttest.NewLog(logOrigin)
	require.NoError(t, err)
	digest := sha256.Sum256([]byte(w.file))
	salt := []byte("sixteen byte slt")
	for i := range 10 {
		entry := sha256.Sum256(fmt.Appendf(nil, "another client's entry %d", i))
		if i == 3 {
			entry = evlog.EntryOf(salt, digest)
		}
		_, err := w.log.Append(entry)
		require.NoError(t, err)
	}
	for _, size := range []uint64{6, 10} {
		_, err := w.log.Checkpoint(size)
		require.NoError(t, err)
	}
	ref6, err := w.log.Ref(6)
	require.NoError(t, err)
	ref10, err := w.log.Ref(10)
	require.NoError(t, err)

	intruderKey, err := crypto.GenerateKey()
	require.NoError(t, err)
	w.intruder = crypto.PubkeyToAddress(intruderKey.PublicKey)
	dir := t.TempDir()
	evm := startEVM(t, dir, w.intruder)
	w.evmURL = evm.URL()
	keeperKey, err := crypto.LoadECDSA(evm.KeyFile())
	require.NoError(t, err)
	w.keeper = crypto.PubkeyToAddress(keeperKey.PublicKey)

	sol, err := devnet.Start(ctx, devnet.Options{SlotTime: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(sol.Stop)
	w.solURL = sol.URL()

	// keeper's anchors.
	anchorTx, err := receipttest.SignEVM(keeperKey, evm.ChainID(), 0, receipt.EVMCheckpointCalldata(ref6))
	require.NoError(t, err)
	onEVM, err := receipttest.SendEVM(ctx, w.evmURL, anchorTx)
	require.NoError(t, err)
	onEVM.LogSize, onEVM.Root = 6, ref6.Root
	onSol, err := receipttest.AnchorSolana(ctx, w.solURL, sol.Payer(), receipt.SolanaCheckpointMemo(ref10))
	require.NoError(t, err)
	onSol.LogSize, onSol.Root = 10, ref10.Root
	r, err := receipt.Build(ctx, receipt.Rows{EvidenceID: "ev_v3", Digest: digest, Salt: salt, LogIndex: 3, InLog: true,
		LogOrigin: logOrigin, LogKey: w.log.VKey, Anchors: []receipt.AnchorRow{onEVM, onSol}, Checkpoints: w.log.Checkpoints()}, w.log)
	require.NoError(t, err)
	w.raw, err = json.Marshal(r)
	require.NoError(t, err)

	// What a forger has: the same payloads from other accounts, and a
	// payload of another log's checkpoint from keeper's account.
	byIntruder, err := receipttest.AnchorEVM(ctx, w.evmURL, intruderKey, receipt.EVMCheckpointCalldata(ref6))
	require.NoError(t, err)
	w.evmByIntruder = byIntruder.TxRef
	otherKey := ref6
	otherKey.KeyHash ^= 1
	withOtherKey, err := receipttest.AnchorEVM(ctx, w.evmURL, keeperKey, receipt.EVMCheckpointCalldata(otherKey))
	require.NoError(t, err)
	w.evmOtherKey = withOtherKey.TxRef
	solIntruder, err := sol.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)
	solByIntruder, err := receipttest.AnchorSolana(ctx, w.solURL, solIntruder, receipt.SolanaCheckpointMemo(ref10))
	require.NoError(t, err)
	w.solByIntruder = solByIntruder.TxRef

	// A fork: another node of the same chain (same genesis, same keeper
	// key) where the intruder moved first, so keeper's very transaction
	// sits in a block with another hash.
	fork := startEVM(t, dir, w.intruder)
	w.forkURL = fork.URL()
	_, err = receipttest.AnchorEVM(ctx, w.forkURL, intruderKey, receipt.EVMCalldata(sha256.Sum256([]byte("first on the fork"))))
	require.NoError(t, err)
	_, err = receipttest.SendEVM(ctx, w.forkURL, anchorTx)
	require.NoError(t, err)
	return w
}

func startEVM(t *testing.T, dir string, fund ...common.Address) *devchain.Chain {
	t.Helper()
	c, err := devchain.Start(t.Context(), devchain.Options{Dir: dir, BlockTime: 50 * time.Millisecond, FinalityDepth: 3, Fund: fund})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func (w *v3World) receipt(t *testing.T) receipt.Receipt {
	t.Helper()
	r, err := receipt.Parse(w.raw)
	require.NoError(t, err)
	return r
}

func (w *v3World) options() verify.Options {
	return verify.Options{RPC: map[string]string{"etherlink": w.evmURL, "solana": w.solURL}, LogKey: w.log.VKey}
}

func flipHex(s string) string {
	b, _ := hex.DecodeString(s)
	b[len(b)-1] ^= 1
	return hex.EncodeToString(b)
}

func TestAVersionThreeReceiptVerifiesAgainstThePinnedKeyAndBothChains(t *testing.T) {
	w := newV3World(t)
	ctx := context.Background()
	r := w.receipt(t)
	require.NoError(t, verify.File(r, strings.NewReader(w.file)))

	res := verify.Receipt(ctx, r, w.options())
	require.Len(t, res, 2)
	for _, x := range res {
		require.True(t, x.OK, "%s: %s", x.Chain, x.Failed())
		assert.Empty(t, x.Warning, "the key was pinned")
	}
	assert.Contains(t, res[0].Detail, "sent by "+w.keeper.Hex())
	assert.Contains(t, res[0].Detail, "commits to checkpoint 6, which the receipt's (10) extends")

	// Without a pinned key the receipt's own key is used, and every result
	// says so.
	o := w.options()
	o.LogKey = ""
	for _, x := range verify.Receipt(ctx, r, o) {
		assert.True(t, x.OK, x.Failed())
		assert.Equal(t, verify.KeyWarning, x.Warning)
	}

	// Several endpoints that agree: two spellings of the same node.
	o = w.options()
	o.Endpoints = map[string][]string{"etherlink": {strings.Replace(w.evmURL, "127.0.0.1", "localhost", 1)}}
	res = verify.Receipt(ctx, r, o)
	require.True(t, res[0].OK, res[0].Failed())
	assert.Contains(t, res[0].Detail, "(2 endpoints agree)")
}

func TestAVersionThreeReceiptFailsAtTheCheckThatCatchesEachForgery(t *testing.T) {
	w := newV3World(t)
	ctx := context.Background()
	another, err := receipttest.NewLog(logOrigin)
	require.NoError(t, err)
	otherOrigin, err := receipttest.NewLog("other.test/log")
	require.NoError(t, err)

	cases := []struct {
		name   string
		tamper func(r *receipt.Receipt, o *verify.Options)
		chain  string // the anchor that fails ("": every anchor)
		check  string
		reason string
	}{
		{"another pinned key", func(r *receipt.Receipt, o *verify.Options) { o.LogKey = another.VKey }, "", verify.CheckCheckpoint, "signature"},
		{"a key for another log", func(r *receipt.Receipt, o *verify.Options) { o.LogKey = otherOrigin.VKey }, "", verify.CheckCheckpoint,
			`the receipt's log is "keeper.test/log", the key is for "other.test/log"`},
		{"a receipt carrying another key, none pinned", func(r *receipt.Receipt, o *verify.Options) { r.Log.Key, o.LogKey = another.VKey, "" }, "",
			verify.CheckCheckpoint, "signature"},
		{"a checkpoint edited after signing", func(r *receipt.Receipt, o *verify.Options) {
			r.Log.Checkpoint = strings.Replace(r.Log.Checkpoint, "\n10\n", "\n11\n", 1)
		}, "", verify.CheckCheckpoint, "signature"},
		{"a flipped bit in the inclusion proof", func(r *receipt.Receipt, o *verify.Options) { r.Log.Inclusion[1] = flipHex(r.Log.Inclusion[1]) }, "",
			verify.CheckInclusion, "entry 3 is not in checkpoint 10"},
		{"another index", func(r *receipt.Receipt, o *verify.Options) { r.Log.Index = 2 }, "", verify.CheckInclusion, ""},
		{"another salt", func(r *receipt.Receipt, o *verify.Options) { r.Salt = flipHex(r.Salt) }, "", verify.CheckInclusion, ""},
		{"an anchored checkpoint without the entry", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TreeSize = 3 }, "etherlink",
			verify.CheckSize, "the anchored checkpoint has 3 entries; the evidence is entry 3"},
		{"a flipped bit in the consistency proof", func(r *receipt.Receipt, o *verify.Options) {
			r.Anchors[0].Consistency[0] = flipHex(r.Anchors[0].Consistency[0])
		}, "etherlink", verify.CheckConsistency, "from size 6 to 10"},
		{"another anchored root", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].Root = flipHex(r.Anchors[1].Root) }, "solana",
			verify.CheckConsistency, ""},
		{"another network", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].Network = "eip155:1" }, "etherlink", verify.CheckNetwork, "eip155:42793"},
		{"a transaction nobody sent", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = "0x" + strings.Repeat("cd", 32) }, "etherlink",
			verify.CheckTransaction, "is not on"},
		{"a payload naming another log key", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = w.evmOtherKey }, "etherlink",
			verify.CheckPayload, "key hash"},
		{"the same payload sent by another EVM account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = w.evmByIntruder }, "etherlink",
			verify.CheckAccount, "was sent by " + w.intruder.Hex() + ", the receipt's anchoring account is " + w.keeper.Hex()},
		{"the same memo paid by another Solana account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].TxRef = w.solByIntruder }, "solana",
			verify.CheckAccount, "the receipt's anchoring account is"},
		{"another anchoring account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].Account = w.intruder.Hex() }, "etherlink",
			verify.CheckAccount, "was sent by " + w.keeper.Hex()},
		{"no anchoring account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].Account = "" }, "solana",
			verify.CheckAccount, "names no account"},
		{"another block hash", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].BlockHash = "0x" + strings.Repeat("ab", 32) }, "etherlink",
			verify.CheckBlock, "hash"},
		{"two endpoints on two forks", func(r *receipt.Receipt, o *verify.Options) {
			o.Endpoints = map[string][]string{"etherlink": {w.forkURL}}
		}, "etherlink", verify.CheckEndpoints, "endpoint 1 (" + w.evmURL + ") and endpoint 2 (" + w.forkURL + ") disagree on its block"},
		{"a second endpoint down", func(r *receipt.Receipt, o *verify.Options) {
			o.Endpoints = map[string][]string{"solana": {"http://127.0.0.1:1/?api-key=s3cret"}}
		}, "solana", verify.CheckTransaction, "endpoint 2 (http://127.0.0.1:1/…)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, o := w.receipt(t), w.options()
			c.tamper(&r, &o)
			res := verify.Receipt(ctx, r, o)
			require.Len(t, res, 2)
			for _, x := range res {
				if c.chain != "" && x.Chain != c.chain {
					assert.True(t, x.OK, "%s is untouched: %s", x.Chain, x.Failed())
					continue
				}
				require.False(t, x.OK, "%s passed", x.Chain)
				assert.Equal(t, c.check, x.Check, x.Failed())
				assert.Contains(t, x.Reason, c.reason)
				assert.NotContains(t, x.Reason, "s3cret")
			}
		})
	}
}

// TestAnchorKindsAndPayloadsMustMatch: a batch anchor (whose proof holds)
// pointing at a transaction that commits to a checkpoint fails: a
// checkpoint payload is not a batch root.
func TestAnchorKindsAndPayloadsMustMatch(t *testing.T) {
	w := newV3World(t)
	r := w.receipt(t)
	r.Anchors[0].Kind, r.Anchors[0].LeafIndex, r.Anchors[0].Path = receipt.AnchorBatch, 0, []string{}
	r.Anchors[0].TreeSize = 1
	// A one-leaf batch whose root is the bare leaf hash of salt ‖ digest.
	leaf, err := r.Leaf()
	require.NoError(t, err)
	h := sha256.Sum256(append([]byte{0}, leaf...))
	r.Anchors[0].Root = hex.EncodeToString(h[:])
	res := verify.Receipt(context.Background(), r, w.options())
	assert.Equal(t, verify.CheckPayload, res[0].Check, res[0].Failed())
	assert.Contains(t, res[0].Reason, "carries checkpoint 6")
}
