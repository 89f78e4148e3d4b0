package verify

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/receipt"
)

// EVMConfirmations is how deep a block must be for EVM to call it final on
// a node that does not answer the `finalized` block tag.
const EVMConfirmations = 64

type evmHeader struct {
	Number hexutil.Uint64 `json:"number"`
	Hash   common.Hash    `json:"hash"`
	Time   hexutil.Uint64 `json:"timestamp"`
}

type evmReceipt struct {
	BlockHash   common.Hash     `json:"blockHash"`
	BlockNumber hexutil.Uint64  `json:"blockNumber"`
	Status      *hexutil.Uint64 `json:"status"`
}

// EVM asks an EVM node (EtherLink) about transaction ref (hex hash, 0x
// optional): its chain (eth_chainId, as "eip155:<id>"), whether it exists,
// what its calldata commits to, who sent it (recovered from its signature,
// after checking that the transaction the node returned hashes to ref),
// whether it succeeded, its block and that block's time (the canonical
// header's timestamp), and whether that block is canonical and final: at or below the node's `finalized` block, or EVMConfirmations deep
// where the node lacks the tag.
func EVM(ctx context.Context, rpcURL, ref string) (Tx, error) {
	tx, err := evmLookup(ctx, rpcURL, ref)
	if err != nil {
		// Errors from the HTTP client quote the URL, which may hold an API key.
		err = scrub(err, rpcURL)
	}
	return tx, err
}

func evmLookup(ctx context.Context, rpcURL, ref string) (Tx, error) {
	h, err := evmHash(ref)
	if err != nil {
		return Tx{}, err
	}
	rc, err := rpc.DialContext(ctx, rpcURL)
	if err != nil {
		return Tx{}, fmt.Errorf("etherlink: dial %s: %w", rpcURL, err)
	}
	defer rc.Close()

	var (
		chainID     hexutil.Big
		rawTx       json.RawMessage
		rcpt        *evmReceipt
		latest, fin *evmHeader
	)
	elems := []rpc.BatchElem{
		{Method: "eth_chainId", Result: &chainID},
		{Method: "eth_getTransactionByHash", Args: []any{h}, Result: &rawTx},
		{Method: "eth_getTransactionReceipt", Args: []any{h}, Result: &rcpt},
		{Method: "eth_getBlockByNumber", Args: []any{"latest", false}, Result: &latest},
		{Method: "eth_getBlockByNumber", Args: []any{"finalized", false}, Result: &fin},
	}
	if err := rc.BatchCallContext(ctx, elems); err != nil {
		return Tx{}, fmt.Errorf("etherlink: verify %s: %w", h.Hex(), err)
	}
	if elems[0].Error != nil {
		return Tx{}, fmt.Errorf("etherlink: eth_chainId: %w", elems[0].Error)
	}
	if !chainID.ToInt().IsUint64() {
		return Tx{}, fmt.Errorf("etherlink: eth_chainId answered %s", chainID.ToInt())
	}
	v := Tx{Network: receipt.EVMNetwork(chainID.ToInt().Uint64())}
	for _, e := range elems[1:4] {
		if e.Error != nil {
			return v, fmt.Errorf("etherlink: verify %s: %s: %w", h.Hex(), e.Method, e.Error)
		}
	}
	if len(rawTx) == 0 || string(rawTx) == "null" {
		v.Detail = fmt.Sprintf("transaction %s is not known to the node", h.Hex())
		return v, nil
	}
	v.Found = true
	tx, sender, err := evmSignedTx(rawTx, h, chainID.ToInt())
	if err != nil {
		return v, err
	}
	v.Sender = sender.Hex()
	if v.Payload, err = receipt.ParseEVMPayload(tx.Data()); err != nil {
		v.Detail = fmt.Sprintf("transaction %s is not a keeper anchor", h.Hex())
		return v, fmt.Errorf("etherlink: verify %s: %w", h.Hex(), err)
	}
	v.Root = v.Payload.Root
	if rcpt == nil {
		v.Detail = "pending: not yet included in a block"
		return v, nil
	}
	v.Block = uint64(rcpt.BlockNumber)
	v.BlockHash = rcpt.BlockHash.Hex()
	v.Succeeded = rcpt.Status == nil || *rcpt.Status == 1
	if !v.Succeeded {
		v.Detail = fmt.Sprintf("reverted (receipt status 0) in block %d", v.Block)
		return v, nil
	}
	var canon *evmHeader
	if err := rc.CallContext(ctx, &canon, "eth_getBlockByNumber", hexutil.EncodeUint64(v.Block), false); err != nil {
		return v, fmt.Errorf("etherlink: verify %s: block %d: %w", h.Hex(), v.Block, err)
	}
	if canon == nil || canon.Hash != rcpt.BlockHash {
		v.Detail = fmt.Sprintf("included in block %d, which is being reorganised", v.Block)
		return v, nil
	}
	v.BlockTime = time.Unix(int64(canon.Time), 0).UTC()
	if elems[4].Error != nil {
		fin = nil
	}
	evmFinality(&v, latest, fin)
	return v, nil
}

// evmSignedTx decodes the transaction the node answered for h and
// recovers its sender.
func evmSignedTx(rawTx json.RawMessage, h common.Hash, chainID *big.Int) (*types.Transaction, common.Address, error) {
	var tx types.Transaction
	if err := tx.UnmarshalJSON(rawTx); err != nil {
		return nil, common.Address{}, fmt.Errorf("etherlink: verify %s: the node's transaction does not decode: %w", h.Hex(), err)
	}
	// The sender is recovered from the signature of the transaction the
	// node returned, so that transaction must be the one asked for: a node
	// could otherwise answer with another transaction the anchoring account
	// signed.
	if tx.Hash() != h {
		return nil, common.Address{}, fmt.Errorf("etherlink: verify %s: the node returned transaction %s instead", h.Hex(), tx.Hash().Hex())
	}
	sender, err := types.Sender(types.LatestSignerForChainID(chainID), &tx)
	if err != nil {
		return nil, common.Address{}, fmt.Errorf("etherlink: verify %s: cannot recover the sender: %w", h.Hex(), err)
	}
	return &tx, sender, nil
}

// evmFinality says whether v's block is final: at or below the node's
// finalized block or, on a node without the finalized tag (fin nil),
// EVMConfirmations deep below latest.
func evmFinality(v *Tx, latest, fin *evmHeader) {
	if fin != nil {
		v.Final = v.Block <= uint64(fin.Number)
		if v.Final {
			v.Detail = fmt.Sprintf("final: block %d is at or below the finalized block %d", v.Block, fin.Number)
		} else {
			v.Detail = fmt.Sprintf("included in block %d, not final yet (finalized block %d)", v.Block, fin.Number)
		}
		return
	}
	depth := uint64(0)
	if latest != nil && uint64(latest.Number) >= v.Block {
		depth = uint64(latest.Number) - v.Block + 1
	}
	v.Final = depth >= EVMConfirmations
	v.Detail = fmt.Sprintf("included in block %d, %d of %d confirmations (node has no finalized block tag)", v.Block, depth, EVMConfirmations)
}

func evmHash(ref string) (common.Hash, error) {
	s := strings.TrimSpace(ref)
	s = strings.TrimPrefix(s, "etherlink:")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != common.HashLength {
		return common.Hash{}, fmt.Errorf("etherlink: %q is not a transaction hash (32 bytes in hex)", ref)
	}
	return common.BytesToHash(b), nil
}
