package solana

import (
	"context"
	"errors"
	"fmt"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// Verification is what the chain says about an anchor transaction.
type Verification struct {
	Found     bool      // the node has the transaction
	Succeeded bool      // it executed without error (meta.err null)
	Final     bool      // its signature status is finalized
	Root      [32]byte  // the root in its keeper memo (zero when none)
	Block     uint64    // the slot it landed in
	BlockTime time.Time // the slot's time, when the node knows it
	Detail    string    // why it does not verify, when it does not
}

// VerifyTx fetches the transaction with the given signature from the node at
// rpcURL (getTransaction) and reports the root in its keeper memo, whether it
// succeeded, its slot, and whether it is finalized (getSignatureStatuses,
// searching history). A transaction the node does not have is Found false
// and no error; errors are for bad input and failed RPC calls.
func VerifyTx(ctx context.Context, rpcURL, signature string) (Verification, error) {
	var v Verification
	sig, err := sol.SignatureFromBase58(signature)
	if err != nil {
		return v, fmt.Errorf("solana: %q is not a transaction signature", signature)
	}
	client := rpc.New(rpcURL)
	defer client.Close()

	maxVersion := uint64(0)
	res, err := client.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		Encoding:                       sol.EncodingBase64,
		Commitment:                     rpc.CommitmentConfirmed,
		MaxSupportedTransactionVersion: &maxVersion,
	})
	if errors.Is(err, rpc.ErrNotFound) {
		v.Detail = "transaction not found on this cluster (or not yet confirmed)"
		return v, nil
	}
	if err != nil {
		return v, newRPCError(rpcURL, "getTransaction", err)
	}
	v.Found = true
	v.Block = res.Slot
	if res.BlockTime != nil {
		v.BlockTime = res.BlockTime.Time().UTC()
	}
	if res.Meta == nil {
		v.Detail = "the node returned no transaction meta"
	} else if res.Meta.Err != nil {
		v.Detail = "transaction failed: " + errText(res.Meta.Err)
	} else {
		v.Succeeded = true
	}

	var tx *sol.Transaction
	if res.Transaction != nil {
		tx, err = res.Transaction.GetTransaction()
	}
	if tx == nil || err != nil {
		return v, fmt.Errorf("solana: getTransaction: cannot decode transaction %s", signature)
	}
	memos, err := anchorMemos(tx)
	if err != nil {
		return v, err
	}
	var roots [][32]byte
	for _, m := range memos {
		if r, err := ParseMemo(m); err == nil {
			roots = append(roots, r)
		}
	}
	switch len(roots) {
	case 0:
		v.Detail = joinDetail(v.Detail, "no keeper anchor memo in the transaction")
	case 1:
		v.Root = roots[0]
	default:
		v.Detail = joinDetail(v.Detail, fmt.Sprintf("%d keeper anchor memos in one transaction", len(roots)))
	}

	st, err := client.GetSignatureStatuses(ctx, true, sig)
	if err != nil {
		return v, newRPCError(rpcURL, "getSignatureStatuses", err)
	}
	if len(st.Value) == 1 && st.Value[0] != nil {
		v.Final = level(*st.Value[0]) >= levels[rpc.ConfirmationStatusFinalized]
	}
	if !v.Final {
		v.Detail = joinDetail(v.Detail, "not finalized yet")
	}
	return v, nil
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
