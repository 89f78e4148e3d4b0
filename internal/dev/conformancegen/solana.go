package main

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"time"

	sol "github.com/gagliardetto/solana-go"

	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

// memoProgram is the SPL Memo program keeper's anchors call.
var memoProgram = sol.MustPublicKeyFromBase58("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

const (
	lamportsPerSignature = 5000
	payerBalance         = 2_000_000_000
	memoProgramBalance   = 521_498_880
)

// solCluster is one Solana cluster as the corpus's nodes answer for it:
// slots grow by five every two seconds from firstSlot at firstTime.
type solCluster struct {
	genesis   string // base58
	firstSlot uint64
	firstTime time.Time
}

func (c *solCluster) network() string { return receipt.SolanaNetwork(c.genesis) }

func (c *solCluster) slot(at time.Time) uint64 {
	return c.firstSlot + uint64(at.Sub(c.firstTime)/time.Second)*5/2
}

// blockhash is the hash of the block at slot.
func (c *solCluster) blockhash(slot uint64) sol.Hash {
	return sol.Hash(sha256.Sum256(fmt.Appendf(nil, "block %d of %s", slot, c.genesis)))
}

// solTx is a transaction in a block of a Solana cluster.
type solTx struct {
	cluster *solCluster
	tx      *sol.Transaction
	wire    []byte
	slot    uint64
	at      time.Time
	failed  bool
}

// solanaOptions shape a memo transaction beyond keeper's own.
type solanaOptions struct {
	failed bool
	// cosigner is a second signer of the memo instruction whose
	// signature is then spoiled.
	cosigner *sol.PrivateKey
}

// sendMemos is what keeper's adapter sends, paid by payer: one SPL Memo
// instruction per memo, the payer its signing account, included at time at.
func (c *solCluster) sendMemos(payer sol.PrivateKey, memos []string, at time.Time, o solanaOptions) (*solTx, error) {
	slot := c.slot(at)
	accounts := sol.AccountMetaSlice{sol.Meta(payer.PublicKey()).SIGNER()}
	if o.cosigner != nil {
		accounts = append(accounts, sol.Meta(o.cosigner.PublicKey()).SIGNER())
	}
	var ixs []sol.Instruction
	for _, m := range memos {
		ixs = append(ixs, sol.NewInstruction(memoProgram, accounts, []byte(m)))
	}
	tx, err := sol.NewTransaction(ixs, c.blockhash(slot-30), sol.TransactionPayer(payer.PublicKey()))
	if err != nil {
		return nil, fmt.Errorf("solana memo transaction: %w", err)
	}
	if _, err := tx.Sign(func(k sol.PublicKey) *sol.PrivateKey {
		switch {
		case k.Equals(payer.PublicKey()):
			return &payer
		case o.cosigner != nil && k.Equals(o.cosigner.PublicKey()):
			return o.cosigner
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("sign solana memo transaction: %w", err)
	}
	if o.cosigner != nil {
		tx.Signatures[1][0] ^= 1
	}
	wire, err := tx.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode solana memo transaction: %w", err)
	}
	return &solTx{cluster: c, tx: tx, wire: wire, slot: slot, at: at, failed: o.failed}, nil
}

func (x *solTx) signature() string { return x.tx.Signatures[0].String() }

// row is the anchor as keeper records it once final.
func (x *solTx) row() receipt.AnchorRow {
	return receipt.AnchorRow{Chain: "solana", Network: x.cluster.network(), TxRef: x.signature(), Block: x.slot, BlockTime: x.at,
		BlockHash: x.cluster.blockhash(x.slot).String(), Finality: "finalized", Account: x.tx.Message.AccountKeys[0].String()}
}

// Solana's config objects, recorded with each call (Serve matches on the
// first parameter only).
var (
	getTransactionConfig = map[string]any{"commitment": "finalized", "encoding": "base64", "maxSupportedTransactionVersion": 0}
	getBlockConfig       = map[string]any{"commitment": "finalized", "maxSupportedTransactionVersion": 0, "rewards": false, "transactionDetails": "signatures"}
)

// calls are what a node of the cluster answers about the transaction at
// finalized: it and its block.
func (x *solTx) calls() []conformance.Call {
	return []conformance.Call{
		call("getTransaction", []any{x.signature(), getTransactionConfig}, x.transactionJSON()),
		call("getBlock", []any{x.slot, getBlockConfig}, x.blockJSON()),
	}
}

// nodeCalls are what a node of the cluster answers whatever it is asked
// about.
func (c *solCluster) nodeCalls() []conformance.Call {
	return []conformance.Call{call("getGenesisHash", []any{}, c.genesis)}
}

// transactionJSON is getTransaction's answer, base64-encoded.
func (x *solTx) transactionJSON() map[string]any {
	keys := x.tx.Message.AccountKeys
	fee := uint64(lamportsPerSignature * len(x.tx.Signatures))
	pre, post := make([]uint64, len(keys)), make([]uint64, len(keys))
	for i, k := range keys {
		switch {
		case i == 0:
			pre[i], post[i] = payerBalance, payerBalance-fee
		case k.Equals(memoProgram):
			pre[i], post[i] = memoProgramBalance, memoProgramBalance
		}
	}
	var errJSON, status any = nil, map[string]any{"Ok": nil}
	logs := []string{"Program " + memoProgram.String() + " invoke [1]", "Program " + memoProgram.String() + " success"}
	if x.failed {
		errJSON = map[string]any{"InstructionError": []any{0, map[string]any{"Custom": 1}}}
		status = map[string]any{"Err": errJSON}
		logs = []string{"Program " + memoProgram.String() + " invoke [1]", "Program " + memoProgram.String() + " failed: custom program error: 0x1"}
	}
	return map[string]any{
		"slot": x.slot, "blockTime": x.at.Unix(), "version": "legacy",
		"transaction": []string{base64.StdEncoding.EncodeToString(x.wire), "base64"},
		"meta": map[string]any{
			"err": errJSON, "status": status, "fee": fee, "preBalances": pre, "postBalances": post,
			"innerInstructions": []any{}, "logMessages": logs, "preTokenBalances": []any{}, "postTokenBalances": []any{},
			"rewards": []any{}, "loadedAddresses": map[string]any{"readonly": []any{}, "writable": []any{}},
			"computeUnitsConsumed": 14_000,
		},
	}
}

// blockJSON is getBlock's answer with signatures only: the transaction's
// among two others.
func (x *solTx) blockJSON() map[string]any {
	other := func(i int) string {
		s := sha512.Sum512(fmt.Appendf(nil, "transaction %d of slot %d", i, x.slot))
		return sol.SignatureFromBytes(s[:]).String()
	}
	return map[string]any{
		"blockhash": x.cluster.blockhash(x.slot).String(), "previousBlockhash": x.cluster.blockhash(x.slot - 1).String(),
		"parentSlot": x.slot - 1, "blockHeight": x.slot - 16_000_000, "blockTime": x.at.Unix(),
		"signatures": []string{other(0), x.signature(), other(1)},
	}
}
