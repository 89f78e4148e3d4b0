package evm

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rpc"
)

// VerifyConfirmations is how deep a block must be for VerifyTx to call it
// final on a node that does not answer the `finalized` block tag.
const VerifyConfirmations = 64

// Verification is what the chain itself says about an anchor transaction.
type Verification struct {
	Found     bool     // the node knows the transaction
	Succeeded bool     // included with receipt status 1
	Final     bool     // its block is canonical and final
	Root      [32]byte // the root its calldata anchors
	Block     uint64   // the block it was included in (0 while pending)
	Detail    string   // a human-readable account of the above
}

// VerifyTx asks the node at rpcURL (not keeper) about transaction ref (hex
// hash, 0x optional): whether it exists, the root its calldata carries, whether
// it succeeded, its block, and whether that block is final — at or below the
// node's `finalized` block, or VerifyConfirmations deep where the node lacks
// the tag. A transaction that is not a keeper anchor is an error wrapping
// ErrNotAnchor; an unknown one is Found == false without error.
func VerifyTx(ctx context.Context, rpcURL, ref string) (Verification, error) {
	s := newScrubber(nil, rpcURL)
	v, err := verifyTx(ctx, rpcURL, ref)
	if err != nil {
		return v, &scrubbedError{msg: s.text(err.Error()), err: err}
	}
	return v, nil
}

func verifyTx(ctx context.Context, rpcURL, ref string) (Verification, error) {
	h, err := parseRef(ref)
	if err != nil {
		return Verification{}, err
	}
	rc, err := rpc.DialContext(ctx, rpcURL)
	if err != nil {
		return Verification{}, fmt.Errorf("etherlink: dial %s: %w", rpcURL, err)
	}
	defer rc.Close()

	var (
		tx          *rpcTx
		rcpt        *rpcReceipt
		latest, fin *rpcHeader
	)
	elems := []rpc.BatchElem{
		{Method: "eth_getTransactionByHash", Args: []any{h}, Result: &tx},
		receiptElem(h, &rcpt),
		headerElem("latest", &latest),
		headerElem("finalized", &fin),
	}
	if err := rc.BatchCallContext(ctx, elems); err != nil {
		return Verification{}, fmt.Errorf("etherlink: verify %s: %w", h.Hex(), err)
	}
	for _, e := range elems[:3] {
		if e.Error != nil {
			return Verification{}, fmt.Errorf("etherlink: verify %s: %s: %w", h.Hex(), e.Method, e.Error)
		}
	}
	if tx == nil {
		return Verification{Detail: fmt.Sprintf("transaction %s is not known to the node", h.Hex())}, nil
	}
	v := Verification{Found: true}
	root, err := ParsePayload(tx.Input)
	if err != nil {
		v.Detail = fmt.Sprintf("transaction %s is not a keeper anchor", h.Hex())
		return v, fmt.Errorf("etherlink: verify %s: %w", h.Hex(), err)
	}
	v.Root = root
	if rcpt == nil {
		v.Detail = "pending: not yet included in a block"
		return v, nil
	}
	v.Block = uint64(rcpt.BlockNumber)
	v.Succeeded = rcpt.succeeded()
	if !v.Succeeded {
		v.Detail = fmt.Sprintf("reverted (receipt status 0) in block %d", v.Block)
		return v, nil
	}
	var canon *rpcHeader
	if err := rc.CallContext(ctx, &canon, "eth_getBlockByNumber", blockArg(v.Block), false); err != nil {
		return v, fmt.Errorf("etherlink: verify %s: block %d: %w", h.Hex(), v.Block, err)
	}
	if canon == nil || canon.Hash != rcpt.BlockHash {
		v.Detail = fmt.Sprintf("included in block %d, which is being reorganised", v.Block)
		return v, nil
	}
	if elems[3].Error == nil && fin != nil {
		v.Final = v.Block <= uint64(fin.Number)
		if v.Final {
			v.Detail = fmt.Sprintf("final: block %d is at or below the finalized block %d", v.Block, fin.Number)
		} else {
			v.Detail = fmt.Sprintf("included in block %d, not final yet (finalized block %d)", v.Block, fin.Number)
		}
		return v, nil
	}
	depth := uint64(0)
	if latest != nil && uint64(latest.Number) >= v.Block {
		depth = uint64(latest.Number) - v.Block + 1
	}
	v.Final = depth >= VerifyConfirmations
	v.Detail = fmt.Sprintf("included in block %d, %d of %d confirmations (node has no finalized block tag)", v.Block, depth, VerifyConfirmations)
	return v, nil
}

func parseRef(ref string) (common.Hash, error) {
	s := strings.TrimSpace(ref)
	s = strings.TrimPrefix(s, Name+":")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != common.HashLength {
		return common.Hash{}, fmt.Errorf("etherlink: %q is not a transaction hash (32 bytes in hex)", ref)
	}
	return common.BytesToHash(b), nil
}
