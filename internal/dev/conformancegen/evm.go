package main

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

// What the corpus's EVM transactions pay, as keeper's adapter would.
var (
	gwei     = big.NewInt(1e9)
	baseFee  = gwei                                    // every block's base fee
	tipCap   = gwei                                    // maxPriorityFeePerGas
	feeCap   = new(big.Int).Mul(big.NewInt(100), gwei) // maxFeePerGas
	gasPrice = new(big.Int).Add(baseFee, tipCap)       // what each one pays per gas
)

const anchorGas = 100_000

// evmChain is one EVM network as the corpus's nodes answer for it: block
// numbers grow by one a second from firstBlock at firstTime, and its
// finalized block is the one at finalizedAt.
type evmChain struct {
	id         uint64
	firstBlock uint64
	firstTime  time.Time
}

func (c *evmChain) network() string { return receipt.EVMNetwork(c.id) }

func (c *evmChain) number(at time.Time) uint64 {
	return c.firstBlock + uint64(at.Sub(c.firstTime)/time.Second)
}

// evmTx is a transaction included in a block of an EVM chain.
type evmTx struct {
	chain  *evmChain
	tx     *types.Transaction
	from   common.Address
	header *types.Header
	rcpt   *types.Receipt
}

// signEVM signs what keeper's adapter sends: a 0-value EIP-1559
// transaction from key to itself carrying data, for chainID.
func signEVM(key *ecdsa.PrivateKey, chainID, nonce uint64, data []byte) (*types.Transaction, error) {
	from := crypto.PubkeyToAddress(key.PublicKey)
	id := new(big.Int).SetUint64(chainID)
	return types.SignNewTx(key, types.LatestSignerForChainID(id), &types.DynamicFeeTx{
		ChainID: id, Nonce: nonce, GasTipCap: tipCap, GasFeeCap: feeCap, Gas: anchorGas, To: &from, Value: new(big.Int), Data: data,
	})
}

// signLegacy signs a legacy transaction carrying data with signer
// (HomesteadSigner: unprotected; EIP155Signer: protected).
func signLegacy(key *ecdsa.PrivateKey, signer types.Signer, nonce uint64, data []byte) (*types.Transaction, error) {
	from := crypto.PubkeyToAddress(key.PublicKey)
	return types.SignNewTx(key, signer, &types.LegacyTx{Nonce: nonce, GasPrice: gasPrice, Gas: anchorGas, To: &from, Value: new(big.Int), Data: data})
}

// include puts tx, sent by from, alone in the block of chain c at time at,
// succeeded (status 1) or reverted (0). variant makes another block of the
// same number and time (a fork's): "" for the canonical one.
func (c *evmChain) include(tx *types.Transaction, from common.Address, at time.Time, status uint64, variant string) *evmTx {
	rcpt := &types.Receipt{Type: tx.Type(), Status: status, CumulativeGasUsed: intrinsicGas(tx.Data()), Logs: []*types.Log{}}
	rcpt.GasUsed = rcpt.CumulativeGasUsed
	number := c.number(at)
	h := c.header(number, at, variant)
	h.TxHash = types.DeriveSha(types.Transactions{tx}, trie.NewStackTrie(nil))
	h.ReceiptHash = types.DeriveSha(types.Receipts{rcpt}, trie.NewStackTrie(nil))
	h.GasUsed = rcpt.GasUsed
	rcpt.TxHash, rcpt.BlockHash, rcpt.BlockNumber = tx.Hash(), h.Hash(), new(big.Int).SetUint64(number)
	return &evmTx{chain: c, tx: tx, from: from, header: h, rcpt: rcpt}
}

// header is an empty post-Cancun header of block number at time at.
func (c *evmChain) header(number uint64, at time.Time, variant string) *types.Header {
	synth := func(what string) common.Hash {
		return crypto.Keccak256Hash(fmt.Appendf(nil, "%s of block %d on %s%s", what, number, c.network(), variant))
	}
	zero, beacon := uint64(0), synth("parent beacon block root")
	return &types.Header{
		ParentHash: synth("parent hash"), UncleHash: types.EmptyUncleHash, Coinbase: common.BytesToAddress(synth("sequencer").Bytes()),
		Root: synth("state root"), TxHash: types.EmptyTxsHash, ReceiptHash: types.EmptyReceiptsHash,
		Difficulty: new(big.Int), Number: new(big.Int).SetUint64(number), GasLimit: 30_000_000, Time: uint64(at.Unix()),
		Extra: []byte(variant), MixDigest: synth("prevrandao"), BaseFee: baseFee, WithdrawalsHash: &types.EmptyWithdrawalsHash,
		BlobGasUsed: &zero, ExcessBlobGas: &zero, ParentBeaconRoot: &beacon,
	}
}

// intrinsicGas is what a plain transaction with data uses.
func intrinsicGas(data []byte) uint64 {
	gas := uint64(21_000)
	for _, b := range data {
		if b == 0 {
			gas += 4
		} else {
			gas += 16
		}
	}
	return gas
}

// row is the anchor as keeper records it once final.
func (x *evmTx) row() receipt.AnchorRow {
	return receipt.AnchorRow{Chain: "etherlink", Network: x.chain.network(), TxRef: x.tx.Hash().Hex(), Block: x.header.Number.Uint64(),
		BlockTime: time.Unix(int64(x.header.Time), 0).UTC(), BlockHash: x.header.Hash().Hex(), Finality: "finalized", Account: x.from.Hex()}
}

// calls are what a node of the chain answers about the transaction: it,
// its receipt and its block.
func (x *evmTx) calls() []conformance.Call {
	hash := x.tx.Hash().Hex()
	return []conformance.Call{
		call("eth_getTransactionByHash", []any{hash}, x.txJSON()),
		call("eth_getTransactionReceipt", []any{hash}, x.receiptJSON()),
		call("eth_getBlockByNumber", []any{hexutil.EncodeUint64(x.header.Number.Uint64()), false}, blockJSON(x.header, x.tx)),
	}
}

// nodeCalls are what a node of the chain answers whatever it is asked
// about: its chain id and its finalized block.
func (c *evmChain) nodeCalls() []conformance.Call {
	fin := c.header(c.number(finalizedAt), finalizedAt, "")
	return []conformance.Call{
		call("eth_chainId", []any{}, hexutil.EncodeUint64(c.id)),
		call("eth_getBlockByNumber", []any{"finalized", false}, blockJSON(fin)),
	}
}

// emptyBlock is what a node of the chain answers about an empty block
// (variant as for include).
func (c *evmChain) emptyBlock(number uint64, at time.Time, variant string) conformance.Call {
	return call("eth_getBlockByNumber", []any{hexutil.EncodeUint64(number), false}, blockJSON(c.header(number, at, variant)))
}

// txJSON is the transaction as eth_getTransactionByHash answers it.
func (x *evmTx) txJSON() map[string]json.RawMessage {
	raw, err := x.tx.MarshalJSON()
	if err != nil {
		panic(fmt.Sprintf("encode transaction %s: %v", x.tx.Hash(), err)) // plain data: cannot fail
	}
	var m map[string]json.RawMessage
	mustUnmarshal(raw, &m)
	m["blockHash"] = mustJSON(x.header.Hash())
	m["blockNumber"] = mustJSON((*hexutil.Big)(x.header.Number))
	m["from"] = mustJSON(x.from)
	m["transactionIndex"] = mustJSON(hexutil.Uint64(0))
	m["gasPrice"] = mustJSON((*hexutil.Big)(gasPrice)) // the effective price, for every type
	if x.tx.Type() == types.LegacyTxType {
		delete(m, "maxFeePerGas")
		delete(m, "maxPriorityFeePerGas")
	} else {
		m["accessList"] = json.RawMessage("[]")
	}
	return m
}

// receiptJSON is the receipt as eth_getTransactionReceipt answers it.
func (x *evmTx) receiptJSON() map[string]any {
	return map[string]any{
		"blockHash": x.header.Hash(), "blockNumber": (*hexutil.Big)(x.header.Number), "contractAddress": nil,
		"cumulativeGasUsed": hexutil.Uint64(x.rcpt.CumulativeGasUsed), "effectiveGasPrice": (*hexutil.Big)(gasPrice),
		"from": x.from, "gasUsed": hexutil.Uint64(x.rcpt.GasUsed), "logs": []any{}, "logsBloom": types.Bloom{},
		"status": hexutil.Uint64(x.rcpt.Status), "to": x.tx.To(), "transactionHash": x.tx.Hash(),
		"transactionIndex": hexutil.Uint64(0), "type": hexutil.Uint64(x.tx.Type()),
	}
}

// blockJSON is a block as eth_getBlockByNumber answers it without full
// transactions: the header's fields, its hash (types.Header.Hash, so a
// verifier that rehashes the fields gets it) and the transactions' hashes.
func blockJSON(h *types.Header, txs ...*types.Transaction) map[string]any {
	hashes := make([]common.Hash, len(txs))
	for i, tx := range txs {
		hashes[i] = tx.Hash()
	}
	size := types.NewBlockWithHeader(h).WithBody(types.Body{Transactions: txs, Withdrawals: []*types.Withdrawal{}}).Size()
	return map[string]any{
		"parentHash": h.ParentHash, "sha3Uncles": h.UncleHash, "miner": h.Coinbase, "stateRoot": h.Root,
		"transactionsRoot": h.TxHash, "receiptsRoot": h.ReceiptHash, "logsBloom": h.Bloom,
		"difficulty": (*hexutil.Big)(h.Difficulty), "number": (*hexutil.Big)(h.Number), "gasLimit": hexutil.Uint64(h.GasLimit),
		"gasUsed": hexutil.Uint64(h.GasUsed), "timestamp": hexutil.Uint64(h.Time), "extraData": hexutil.Bytes(h.Extra),
		"mixHash": h.MixDigest, "nonce": h.Nonce, "baseFeePerGas": (*hexutil.Big)(h.BaseFee), "withdrawalsRoot": h.WithdrawalsHash,
		"blobGasUsed": (*hexutil.Uint64)(h.BlobGasUsed), "excessBlobGas": (*hexutil.Uint64)(h.ExcessBlobGas),
		"parentBeaconBlockRoot": h.ParentBeaconRoot, "hash": h.Hash(), "size": hexutil.Uint64(size),
		"transactions": hashes, "uncles": []common.Hash{}, "withdrawals": []any{},
	}
}

// types155 signs legacy transactions replay-protected for chainID (EIP-155).
func types155(chainID uint64) types.Signer {
	return types.NewEIP155Signer(new(big.Int).SetUint64(chainID))
}

// homestead signs legacy transactions unprotected: valid on every chain.
func homestead() types.Signer { return types.HomesteadSigner{} }
