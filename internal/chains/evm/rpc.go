package evm

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// Minimal JSON shapes, decoded leniently: only the fields keeper needs, so
// nodes that are not geth (EtherLink's, anvil) decode too, and block hashes are
// taken as the node reports them rather than recomputed from header fields.

type rpcHeader struct {
	Number    hexutil.Uint64 `json:"number"`
	Hash      common.Hash    `json:"hash"`
	Timestamp hexutil.Uint64 `json:"timestamp"`
	BaseFee   *hexutil.Big   `json:"baseFeePerGas"`
}

type rpcReceipt struct {
	TxHash      common.Hash     `json:"transactionHash"`
	BlockHash   common.Hash     `json:"blockHash"`
	BlockNumber hexutil.Uint64  `json:"blockNumber"`
	Status      *hexutil.Uint64 `json:"status"`
}

// succeeded: status 1 (a receipt without status predates Byzantium; EIP-1559
// chains always report it).
func (r *rpcReceipt) succeeded() bool { return r.Status == nil || *r.Status == 1 }

type rpcTx struct {
	Hash        common.Hash     `json:"hash"`
	Input       hexutil.Bytes   `json:"input"`
	BlockNumber *hexutil.Uint64 `json:"blockNumber"`
}

func blockArg(n uint64) string { return hexutil.EncodeUint64(n) }

func headerElem(tag string, out **rpcHeader) rpc.BatchElem {
	return rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{tag, false}, Result: out}
}

func receiptElem(h common.Hash, out **rpcReceipt) rpc.BatchElem {
	return rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{h}, Result: out}
}

type callArgs struct {
	From  common.Address `json:"from"`
	To    common.Address `json:"to"`
	Data  hexutil.Bytes  `json:"data"`
	Value *hexutil.Big   `json:"value"`
}

// receipts looks up the receipts of hashes and the signer's `latest` nonce in
// one batch call. A receipt lookup the node answered with an error is in
// lookupErrs, not in the map: callers decide on re-signing from the answer,
// so they must tell "unknown" from "not mined" (see minedReceipts).
func (a *Adapter) receipts(ctx context.Context, hashes []common.Hash) (got map[common.Hash]*rpcReceipt, nonce uint64, lookupErrs []error, err error) {
	out := make([]*rpcReceipt, len(hashes))
	var n hexutil.Uint64
	elems := make([]rpc.BatchElem, 0, len(hashes)+1)
	for i, h := range hashes {
		elems = append(elems, receiptElem(h, &out[i]))
	}
	elems = append(elems, rpc.BatchElem{Method: "eth_getTransactionCount", Args: []any{a.from, "latest"}, Result: &n})
	if err := a.rc.BatchCallContext(ctx, elems); err != nil {
		return nil, 0, nil, fmt.Errorf("receipt lookup: %w", err)
	}
	if e := elems[len(hashes)].Error; e != nil {
		return nil, 0, nil, fmt.Errorf("receipt lookup (eth_getTransactionCount): %w", e)
	}
	got = map[common.Hash]*rpcReceipt{}
	for i, h := range hashes {
		switch {
		case elems[i].Error != nil:
			lookupErrs = append(lookupErrs, fmt.Errorf("receipt of %s: %w", h.Hex(), elems[i].Error))
		case out[i] != nil:
			got[h] = out[i]
		}
	}
	return got, uint64(n), lookupErrs, nil
}

func bigOf(h *hexutil.Big) *big.Int {
	if h == nil {
		return nil
	}
	return (*big.Int)(h)
}
