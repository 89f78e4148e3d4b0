package solana

import (
	"errors"
	"fmt"

	sol "github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"

	"github.com/keeperhq/keeper/receipt"
)

// MemoPrefix starts every anchor memo; the root follows as 64 lowercase hex
// characters (the format belongs to package receipt, which verifiers read).
const MemoPrefix = receipt.PayloadPrefix

// MemoProgramID is the SPL Memo program (v2/v3) that carries the anchor.
var MemoProgramID = sol.MustPublicKeyFromBase58("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

// ComputeUnitLimit is the compute unit limit set on anchor transactions that
// pay a priority fee, sized for one memo with one signer. The Memo program
// LiteSVM ships (which logs the signer with sol_log_pubkey) uses about 800
// units for the whole transaction (this package's tests measure it); builds
// that format the signer's address in the program, as the local devnet
// models (1,500 + 11,500 per signer + 9 per byte), need about 14,000. An
// anchor over its limit fails and still pays its fee, while the limit only
// scales the priority fee (price × limit / 10^6 lamports), so the limit
// covers the costlier build with a margin.
const ComputeUnitLimit = 20_000

// Memo is the memo text that anchors root: MemoPrefix + hex(root).
func Memo(root [32]byte) string { return receipt.SolanaMemo(root) }

// ParseMemo returns what an anchor memo of either form carries. It accepts
// only the exact forms receipt.SolanaMemo and receipt.SolanaCheckpointMemo make.
func ParseMemo(memo string) (receipt.Payload, error) { return receipt.ParseSolanaPayload(memo) }

// BuildAnchorTx builds and signs the exact transaction the adapter sends for
// an anchor: a legacy transaction paid and signed by payer, with recent blockhash
// blockhash, holding one SPL Memo instruction whose data is memo and
// whose only account is the payer as signer. A priorityFee above zero (in
// micro-lamports per compute unit) puts ComputeBudget SetComputeUnitLimit
// (ComputeUnitLimit) and SetComputeUnitPrice instructions before the memo.
// It returns the transaction and its wire bytes.
func BuildAnchorTx(payer sol.PrivateKey, memo string, blockhash sol.Hash, priorityFee uint64) (*sol.Transaction, []byte, error) {
	if err := checkKey(payer); err != nil {
		return nil, nil, err
	}
	pub := payer.PublicKey()
	var ixs []sol.Instruction
	if priorityFee > 0 {
		limit, err := computebudget.NewSetComputeUnitLimitInstruction(ComputeUnitLimit).ValidateAndBuild()
		if err != nil {
			return nil, nil, fmt.Errorf("solana: compute unit limit instruction: %w", err)
		}
		price, err := computebudget.NewSetComputeUnitPriceInstruction(priorityFee).ValidateAndBuild()
		if err != nil {
			return nil, nil, fmt.Errorf("solana: compute unit price instruction: %w", err)
		}
		ixs = append(ixs, limit, price)
	}
	ixs = append(ixs, sol.NewInstruction(MemoProgramID, sol.AccountMetaSlice{sol.Meta(pub).SIGNER()}, []byte(memo)))

	tx, err := sol.NewTransaction(ixs, blockhash, sol.TransactionPayer(pub))
	if err != nil {
		return nil, nil, fmt.Errorf("solana: build anchor transaction: %w", err)
	}
	if _, err := tx.Sign(func(k sol.PublicKey) *sol.PrivateKey {
		if k.Equals(pub) {
			return &payer
		}
		return nil
	}); err != nil {
		return nil, nil, errors.New("solana: sign anchor transaction: the payer key cannot sign")
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return nil, nil, fmt.Errorf("solana: encode anchor transaction: %w", err)
	}
	return tx, raw, nil
}

// anchorMemos returns the data of every memo instruction of tx.
func anchorMemos(tx *sol.Transaction) ([]string, error) {
	var out []string
	for _, ix := range tx.Message.Instructions {
		prog, err := tx.Message.ResolveProgramIDIndex(ix.ProgramIDIndex)
		if err != nil {
			return nil, fmt.Errorf("solana: transaction names an unknown program: %w", err)
		}
		if prog.Equals(MemoProgramID) {
			out = append(out, string(ix.Data))
		}
	}
	return out, nil
}
