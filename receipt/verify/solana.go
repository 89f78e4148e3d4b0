package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/keeperhq/keeper/receipt"
)

// SolanaMemoProgram is the SPL Memo program whose instruction carries the
// anchor memo.
var SolanaMemoProgram = sol.MustPublicKeyFromBase58("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

// Solana asks a Solana node about the transaction with the given signature:
// its cluster (getGenesisHash), what its keeper memo commits to and its fee
// payer (getTransaction; the transaction must carry that signature first
// and every signature must verify, so the node cannot answer with another),
// whether it succeeded, its slot and that slot's blockhash and time
// (getBlock's blockTime), and
// whether it is finalized (getSignatureStatuses, searching history).
func Solana(ctx context.Context, rpcURL, signature string) (Tx, error) {
	tx, err := solanaLookup(ctx, rpcURL, signature)
	if err != nil {
		err = scrub(err, rpcURL)
	}
	return tx, err
}

func solanaLookup(ctx context.Context, rpcURL, signature string) (Tx, error) {
	var v Tx
	sig, err := sol.SignatureFromBase58(strings.TrimPrefix(strings.TrimSpace(signature), "solana:"))
	if err != nil {
		return v, fmt.Errorf("solana: %q is not a transaction signature", signature)
	}
	client := rpc.New(rpcURL)
	defer client.Close()

	genesis, err := client.GetGenesisHash(ctx)
	if err != nil {
		return v, fmt.Errorf("solana: getGenesisHash at %s: %w", rpcURL, err)
	}
	v.Network = receipt.SolanaNetwork(genesis.String())

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
		return v, fmt.Errorf("solana: getTransaction at %s: %w", rpcURL, err)
	}
	v.Found = true
	v.Block = res.Slot
	if res.Meta == nil {
		v.Detail = "the node returned no transaction meta"
	} else if res.Meta.Err != nil {
		v.Detail = fmt.Sprintf("transaction failed: %v", res.Meta.Err)
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
	if len(tx.Signatures) == 0 || tx.Signatures[0] != sig {
		return v, fmt.Errorf("solana: getTransaction %s: the node returned another transaction", signature)
	}
	if err := tx.VerifySignatures(); err != nil {
		return v, fmt.Errorf("solana: getTransaction %s: %w", signature, err)
	}
	// The fee payer is the first account, and a signer whenever the
	// transaction has a signature at all.
	if tx.Message.Header.NumRequiredSignatures > 0 && len(tx.Message.AccountKeys) > 0 {
		v.Sender = tx.Message.AccountKeys[0].String()
	}
	payloads := MemoPayloads(tx)
	switch len(payloads) {
	case 0:
		v.Detail = joinDetail(v.Detail, "no keeper anchor memo in the transaction")
	case 1:
		v.Payload, v.Root = payloads[0], payloads[0].Root
	default:
		v.Detail = joinDetail(v.Detail, fmt.Sprintf("%d keeper anchor memos in one transaction", len(payloads)))
	}

	noRewards := false
	block, err := client.GetBlockWithOpts(ctx, res.Slot, &rpc.GetBlockOpts{
		TransactionDetails:             rpc.TransactionDetailsNone,
		Rewards:                        &noRewards,
		Commitment:                     rpc.CommitmentConfirmed,
		MaxSupportedTransactionVersion: &maxVersion,
	})
	if err != nil {
		return v, fmt.Errorf("solana: getBlock %d at %s: %w", res.Slot, rpcURL, err)
	}
	v.BlockHash = block.Blockhash.String()
	if block.BlockTime != nil {
		v.BlockTime = block.BlockTime.Time().UTC()
	}

	st, err := client.GetSignatureStatuses(ctx, true, sig)
	if err != nil {
		return v, fmt.Errorf("solana: getSignatureStatuses at %s: %w", rpcURL, err)
	}
	if len(st.Value) == 1 && st.Value[0] != nil {
		v.Final = st.Value[0].ConfirmationStatus == rpc.ConfirmationStatusFinalized
	}
	if !v.Final {
		v.Detail = joinDetail(v.Detail, "not finalized yet")
	}
	return v, nil
}

// SolanaSentBy says why tx, read under sig, is not a transaction payer sent
// (nil when it is): payer must be its fee payer (the first account key, a
// required signer), sig its first signature, and every signature must
// verify over the message. Anyone can send an account a transaction with a
// keeper memo; only the account's own count (docs/log.md, Trust).
func SolanaSentBy(tx *sol.Transaction, sig sol.Signature, payer sol.PublicKey) error {
	keys := tx.Message.AccountKeys
	if len(keys) == 0 || !keys[0].Equals(payer) || tx.Message.Header.NumRequiredSignatures == 0 {
		return fmt.Errorf("was not paid by the anchoring account %s", payer)
	}
	if len(tx.Signatures) == 0 || tx.Signatures[0] != sig {
		return fmt.Errorf("the node answered with another transaction than %s", sig)
	}
	if err := tx.VerifySignatures(); err != nil {
		return fmt.Errorf("does not verify: %w", err)
	}
	return nil
}

// MemoPayloads are the keeper anchor payloads a Solana transaction's SPL
// Memo instructions carry, read (other memos are left out).
func MemoPayloads(tx *sol.Transaction) []receipt.Payload {
	var out []receipt.Payload
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIDIndex) >= len(tx.Message.AccountKeys) || !tx.Message.AccountKeys[ix.ProgramIDIndex].Equals(SolanaMemoProgram) {
			continue
		}
		if p, err := receipt.ParseSolanaPayload(string(ix.Data)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
