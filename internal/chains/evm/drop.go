package evm

import (
	"context"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// A silent drop. EtherLink keeps no pool of waiting transactions: one whose
// max fee does not cover the execution fee plus the inclusion fee is
// accepted by eth_sendRawTransaction and then never mined, and the node
// forgets it. Waiting ResubmitTimeout (60 s by default) for its receipt
// would stall the anchor for that long; with Config.BlockTime set, a
// transaction still unknown to the node DropBlocks block times after it was
// signed (or last resent) is reported Dropped, and Submit re-signs it on the
// same nonce at the current price (bump). The nonce never changes, so at most
// one of the batch's transactions can be mined.

// dropAfter is how long an unknown transaction waits before it counts as
// dropped: DropBlocks block times, 0 when BlockTime is not set.
func (a *Adapter) dropAfter() time.Duration {
	if a.cfg.BlockTime <= 0 {
		return 0
	}
	return DropBlocks * a.cfg.BlockTime
}

// vanished reports that transaction ref, signed or last resent at since, is
// unknown to the node (eth_getTransactionByHash null) after dropAfter. The
// caller has seen no receipt for it. A lookup that fails counts as not
// vanished: the transaction is then rebroadcast or waited on as before.
func (a *Adapter) vanished(ctx context.Context, ref string, since time.Time) bool {
	wait := a.dropAfter()
	if wait <= 0 || a.now().Sub(since) < wait {
		return false
	}
	var tx *rpcTx
	if err := a.rc.CallContext(ctx, &tx, "eth_getTransactionByHash", common.HexToHash(ref)); err != nil {
		a.log.Debug("could not ask the node whether it still knows a transaction", "ref", ref, a.errAttr(err))
		return false
	}
	return tx == nil
}
