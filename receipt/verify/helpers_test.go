package verify_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/keeperhq/keeper/evlog/trust"
	"golang.org/x/mod/sumdb/note"
	"math/big"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// anchorOnLocalChain does what keeper does for one file, by hand: it starts
// a local EVM chain, anchors the root of a three-leaf tree whose middle leaf
// is the file's salted digest (a plain go-ethereum transaction), waits until
// the block is final and returns the file's version 2 receipt, the chain's
// RPC URL, the anchoring account, and a function that stops the chain.
func anchorOnLocalChain(file string) (raw []byte, rpcURL, account string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "verify-example-")
	if err != nil {
		return nil, "", "", nil, err
	}
	const finalityDepth = 3
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: dir, BlockTime: 50 * time.Millisecond, FinalityDepth: finalityDepth, AheadOfClock: true})
	if err != nil {
		return nil, "", "", nil, err
	}
	stop = func() { _ = c.Stop(); _ = os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			stop()
		}
	}()

	digest := sha256.Sum256([]byte(file))
	salt := []byte("sixteen byte slt")
	leaves := [][]byte{
		receipt.Leaf([]byte("another client 1"), sha256.Sum256([]byte("a neighbour"))),
		receipt.Leaf(salt, digest),
		receipt.Leaf([]byte("another client 2"), sha256.Sum256([]byte("another one"))),
	}
	tree, err := merkle.Build(leaves)
	if err != nil {
		return nil, "", "", nil, err
	}
	root := tree.Root()
	path, err := tree.Path(1)
	if err != nil {
		return nil, "", "", nil, err
	}

	ctx := context.Background()
	ec, err := ethclient.Dial(c.URL())
	if err != nil {
		return nil, "", "", nil, err
	}
	defer ec.Close()
	key, err := crypto.LoadECDSA(c.KeyFile())
	if err != nil {
		return nil, "", "", nil, err
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := ec.PendingNonceAt(ctx, from)
	if err != nil {
		return nil, "", "", nil, err
	}
	chainID := new(big.Int).SetUint64(c.ChainID())
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 100_000,
		To: &from, Data: receipt.EVMCalldata(root),
	})
	if err != nil {
		return nil, "", "", nil, err
	}
	if err := ec.SendTransaction(ctx, tx); err != nil {
		return nil, "", "", nil, err
	}
	// Sealing the transaction's block and FinalityDepth more makes it final,
	// whatever the chain's own block loop did meanwhile.
	if err := c.Mine(1 + finalityDepth); err != nil {
		return nil, "", "", nil, err
	}
	got, err := verify.EVM(ctx, c.URL(), tx.Hash().Hex())
	if err != nil {
		return nil, "", "", nil, err
	}
	if !got.Final {
		return nil, "", "", nil, fmt.Errorf("anchor not final after %d more blocks: %s", finalityDepth, got.Detail)
	}
	hashes := make([][32]byte, len(path))
	for i, h := range path {
		hashes[i] = h
	}
	raw, err = json.Marshal(receipt.Receipt{
		Version: receipt.VersionSalted, EvidenceID: "ev_example", Digest: hex.EncodeToString(digest[:]), Salt: hex.EncodeToString(salt),
		Tree: receipt.TreeRFC6962,
		Anchors: []receipt.Anchor{{
			Chain: "etherlink", Network: receipt.EVMNetwork(c.ChainID()), LeafIndex: 1, TreeSize: 3,
			Path: receipt.HexPath(hashes), Root: hex.EncodeToString(root[:]), TxRef: tx.Hash().Hex(),
			Block: got.Block, BlockHash: got.BlockHash, BlockTime: got.BlockTime, Finality: "finalized",
		}},
	})
	return raw, c.URL(), from.Hex(), stop, err
}

// preLogTrust is the trust root of a log that began after the anchor of
// the version 2 receipt raw (an hour after its block), listing account on
// the anchor's network from size 0: what a deployment that anchored
// batches before its log publishes, so the receipt's batch anchor counts.
func preLogTrust(raw []byte, account string) ([]byte, error) {
	r, err := receipt.Parse(raw)
	if err != nil {
		return nil, err
	}
	_, vkey, err := note.GenerateKey(rand.Reader, "log.example.org/pre")
	if err != nil {
		return nil, err
	}
	a := r.Anchors[0]
	root, err := trust.New(vkey, a.BlockTime.Add(time.Hour))
	if err != nil {
		return nil, err
	}
	root.List(a.Chain, a.Network, account, 0, a.BlockTime)
	return root.Marshal(), nil
}
