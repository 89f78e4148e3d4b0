package main

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

func accepted(t *testing.T) []conformance.Vector {
	_, vs := generated(t)
	var out []conformance.Vector
	for _, v := range vs {
		if v.Expect.Verifier.Verdict == conformance.Accept {
			out = append(out, v)
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestGenuineEVMTransactionsRebuildToTheirHashAndSender(t *testing.T) {
	for _, v := range accepted(t) {
		for _, name := range v.Endpoints["etherlink"] {
			var chainID hexutil.Big
			for _, c := range v.Answers[name] {
				switch c.Method {
				case "eth_chainId":
					require.NoError(t, json.Unmarshal(c.Result, &chainID), v.Name)
				case "eth_getTransactionByHash":
					var tx types.Transaction
					require.NoError(t, tx.UnmarshalJSON(c.Result), v.Name)
					var asked common.Hash
					require.NoError(t, json.Unmarshal(c.Params[0], &asked))
					assert.Equal(t, asked, tx.Hash(), "%s: the transaction rebuilt from the node's fields", v.Name)
					var fields struct{ From common.Address }
					require.NoError(t, json.Unmarshal(c.Result, &fields))
					from, err := types.Sender(types.LatestSignerForChainID((*big.Int)(&chainID)), &tx)
					require.NoError(t, err, v.Name)
					assert.Equal(t, fields.From, from, "%s: the sender recovered from the signature", v.Name)
				}
			}
		}
	}
}

func TestGenuineEVMHeadersRehashToTheirHash(t *testing.T) {
	for _, v := range accepted(t) {
		for _, name := range v.Endpoints["etherlink"] {
			for _, c := range v.Answers[name] {
				if c.Method != "eth_getBlockByNumber" {
					continue
				}
				var h types.Header
				require.NoError(t, json.Unmarshal(c.Result, &h), v.Name)
				var stated struct{ Hash common.Hash }
				require.NoError(t, json.Unmarshal(c.Result, &stated))
				assert.Equal(t, stated.Hash, h.Hash(), "%s: block %s", v.Name, c.Params[0])
				assert.NotNil(t, h.ParentBeaconRoot, "the rehash covers Cancun's fields")
			}
		}
	}
}

func TestGenuineSolanaTransactionsVerifyAndSitInTheirBlocks(t *testing.T) {
	for _, v := range accepted(t) {
		for _, name := range v.Endpoints["solana"] {
			blocks := map[string][]string{}
			var txSlots = map[string]string{}
			for _, c := range v.Answers[name] {
				switch c.Method {
				case "getTransaction":
					var got struct {
						Slot        json.Number
						Transaction []string
					}
					require.NoError(t, json.Unmarshal(c.Result, &got), v.Name)
					tx, err := sol.TransactionFromBase64(got.Transaction[0])
					require.NoError(t, err, v.Name)
					require.NoError(t, tx.VerifySignatures(), v.Name)
					var asked string
					require.NoError(t, json.Unmarshal(c.Params[0], &asked))
					assert.Equal(t, asked, tx.Signatures[0].String(), v.Name)
					txSlots[asked] = got.Slot.String()
				case "getBlock":
					var got struct{ Signatures []string }
					require.NoError(t, json.Unmarshal(c.Result, &got), v.Name)
					blocks[string(c.Params[0])] = got.Signatures
				}
			}
			for sig, slot := range txSlots {
				assert.Contains(t, blocks[slot], sig, "%s: the block at slot %s lists the transaction", v.Name, slot)
			}
		}
	}
}

func TestGenuineReceiptsProveTheirAnchorsOffline(t *testing.T) {
	for _, v := range accepted(t) {
		var r receipt.Receipt
		var err error
		if v.ReceiptFormat == conformance.FormatTLogProof {
			r, err = receipt.ParseTLogProof([]byte(v.Receipt))
		} else {
			r, err = receipt.Parse([]byte(v.Receipt))
		}
		require.NoError(t, err, v.Name)
		for _, a := range r.Anchors {
			assert.NoError(t, r.CheckProof(a), v.Name)
		}
		root, err := trust.Open([]byte(v.Trust), nil)
		require.NoError(t, err, v.Name)
		if r.Log != nil {
			key, err := root.Key()
			require.NoError(t, err)
			_, err = key.Open([]byte(r.Log.Checkpoint))
			assert.NoError(t, err, "%s: the checkpoint is signed by the pinned key", v.Name)
		}
		if v.TrustUpdate != "" {
			key, err := root.Key()
			require.NoError(t, err)
			next, err := trust.Open([]byte(v.TrustUpdate), &key)
			require.NoError(t, err, v.Name)
			assert.NoError(t, trust.Extends(root, next), v.Name)
		}
		assert.True(t, strings.HasSuffix(v.Receipt, "\n"), v.Name)
	}
}
