package chainread

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrSlotMismatch marks a Solana node that places a transaction in a slot
// whose finalized block does not hold it.
var ErrSlotMismatch = errors.New("the slot does not hold the transaction")

// SolanaNetwork is the CAIP-2 id of the Solana cluster whose genesis hash
// is genesisHash (base58): "solana:" and the hash's first 32 characters.
func SolanaNetwork(genesisHash string) string {
	if len(genesisHash) > 32 {
		genesisHash = genesisHash[:32]
	}
	return "solana:" + genesisHash
}

// Solana asks c about the transaction whose first signature is sig, all at
// `finalized`: the cluster (getGenesisHash), the transaction's wire bytes,
// slot and outcome (getTransaction, decoded with DecodeSolanaTransaction,
// so Sender and Payloads are read from the signed bytes), and its block's
// hash and time (getBlock, whose signatures must include sig). A
// transaction the node does not have at finalized (unknown, or not final
// yet) is Found false and no error. An answer that does not decode, or is
// another transaction, is an error wrapping ErrMalformed; a block that
// does not hold the transaction, one wrapping ErrSlotMismatch. Errors name
// the method, never the endpoint.
func Solana(ctx context.Context, c Caller, sig [64]byte) (Tx, error) {
	var v Tx
	ref := Base58Encode(sig[:])
	network, err := solanaGenesis(ctx, c)
	if err != nil {
		return v, err
	}
	v.Network = network

	raw, err := c.Call(ctx, "getTransaction", ref, map[string]any{
		"encoding": "base64", "commitment": "finalized", "maxSupportedTransactionVersion": 0})
	if err != nil {
		return v, fmt.Errorf("solana: getTransaction %s: %w", ref, err)
	}
	if isNull(raw) {
		v.Detail = "transaction not found at finalized (unknown, or not final yet)"
		return v, nil
	}
	res, tx, err := decodeSolanaTxResult(raw)
	if err != nil {
		return v, fmt.Errorf("solana: getTransaction %s: %w", ref, err)
	}
	if tx.Signatures[0] != sig {
		return v, fmt.Errorf("solana: getTransaction %s: %w: the node returned another transaction (%s)",
			ref, ErrMalformed, Base58Encode(tx.Signatures[0][:]))
	}
	v.Found = true
	v.Sender = tx.FeePayer()
	v.Payloads = tx.Memos()
	v.Block = res.slot
	switch {
	case res.meta == nil:
		v.Detail = "the node returned no transaction meta"
	case res.failure != "":
		v.Detail = "transaction failed: " + res.failure
	default:
		v.Succeeded = true
	}

	b, err := solanaBlock(ctx, c, res.slot)
	if err != nil {
		return v, err
	}
	v.BlockHash = b.hash
	if b.time != nil {
		v.BlockTime = time.Unix(*b.time, 0).UTC()
	}
	if !slices.Contains(b.signatures, ref) {
		v.Detail = solJoin(v.Detail, fmt.Sprintf("slot %d does not hold the transaction", res.slot))
		return v, fmt.Errorf("solana: getBlock %d: %w: %s is not among its %d transactions", res.slot, ErrSlotMismatch, ref, len(b.signatures))
	}
	v.Final = true // both read at finalized
	return v, nil
}

func solanaGenesis(ctx context.Context, c Caller) (string, error) {
	raw, err := c.Call(ctx, "getGenesisHash")
	if err != nil {
		return "", fmt.Errorf("solana: getGenesisHash: %w", err)
	}
	var h string
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("solana: getGenesisHash: %w: %w", ErrMalformed, err)
	}
	if _, err := base58Fixed(h, 32); err != nil {
		return "", fmt.Errorf("solana: getGenesisHash: %w: %w", ErrMalformed, err)
	}
	return SolanaNetwork(h), nil
}

// solTxResult is what Solana reads of getTransaction's answer.
type solTxResult struct {
	slot    uint64
	meta    map[string]json.RawMessage // nil: none
	failure string                     // meta.err, as JSON, when not null
}

func decodeSolanaTxResult(raw json.RawMessage) (solTxResult, SolanaTransaction, error) {
	var res solTxResult
	var a struct {
		Slot        *uint64         `json:"slot"`
		Transaction []string        `json:"transaction"`
		Meta        json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return res, SolanaTransaction{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if a.Slot == nil {
		return res, SolanaTransaction{}, fmt.Errorf("%w: no slot", ErrMalformed)
	}
	res.slot = *a.Slot
	if len(a.Transaction) != 2 || a.Transaction[1] != "base64" {
		return res, SolanaTransaction{}, fmt.Errorf("%w: the transaction is not [data, \"base64\"]", ErrMalformed)
	}
	wire, err := base64.StdEncoding.Strict().DecodeString(a.Transaction[0])
	if err != nil {
		return res, SolanaTransaction{}, fmt.Errorf("%w: transaction: %w", ErrMalformed, err)
	}
	tx, err := DecodeSolanaTransaction(wire)
	if err != nil {
		return res, tx, err
	}
	if !isNull(a.Meta) {
		if err := json.Unmarshal(a.Meta, &res.meta); err != nil {
			return res, tx, fmt.Errorf("%w: meta: %w", ErrMalformed, err)
		}
		e, ok := res.meta["err"]
		if !ok {
			return res, tx, fmt.Errorf("%w: meta has no err", ErrMalformed)
		}
		if !isNull(e) {
			var b bytes.Buffer
			if err := json.Compact(&b, e); err != nil {
				return res, tx, fmt.Errorf("%w: meta.err: %w", ErrMalformed, err)
			}
			res.failure = b.String()
		}
	}
	return res, tx, nil
}

// solBlock is what Solana reads of getBlock's answer.
type solBlock struct {
	hash       string
	time       *int64
	signatures []string
}

func solanaBlock(ctx context.Context, c Caller, slot uint64) (solBlock, error) {
	raw, err := c.Call(ctx, "getBlock", slot, map[string]any{
		"commitment": "finalized", "transactionDetails": "signatures", "rewards": false, "maxSupportedTransactionVersion": 0})
	if err != nil {
		return solBlock{}, fmt.Errorf("solana: getBlock %d: %w", slot, err)
	}
	var a struct {
		Blockhash  *string   `json:"blockhash"`
		BlockTime  *int64    `json:"blockTime"`
		Signatures *[]string `json:"signatures"`
	}
	if isNull(raw) {
		return solBlock{}, fmt.Errorf("solana: getBlock %d: %w: no block", slot, ErrMalformed)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return solBlock{}, fmt.Errorf("solana: getBlock %d: %w: %w", slot, ErrMalformed, err)
	}
	if a.Blockhash == nil || a.Signatures == nil {
		return solBlock{}, fmt.Errorf("solana: getBlock %d: %w: no blockhash or no signatures", slot, ErrMalformed)
	}
	if _, err := base58Fixed(*a.Blockhash, 32); err != nil {
		return solBlock{}, fmt.Errorf("solana: getBlock %d: %w: blockhash: %w", slot, ErrMalformed, err)
	}
	return solBlock{hash: *a.Blockhash, time: a.BlockTime, signatures: *a.Signatures}, nil
}

// solNull reports whether a JSON value is absent or null.
func solJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// solanaHistoryPage is how many signatures one getSignaturesForAddress
// answers (the RPC's most).
const solanaHistoryPage = 1000

// SolanaSignatureInfo is one transaction of an account's history, as
// getSignaturesForAddress states it (the node's word: read the
// transaction itself to judge it).
type SolanaSignatureInfo struct {
	Signature string // base58
	Slot      uint64
	Failed    bool   // err not null
	BlockTime *int64 // unix seconds, when the node states it
}

// SolanaHistory is account's finalized history, newest first
// (getSignaturesForAddress, paged back with "before" until a page is
// shorter than the limit), stopping short of until when it is not "" (the
// signature of a transaction already read). An error reading any page,
// or a page that repeats a signature or goes forward in slots (wrapping
// ErrMalformed), is returned with no history: a history that cannot be
// read whole is not read.
func SolanaHistory(ctx context.Context, c Caller, account string, until string) ([]SolanaSignatureInfo, error) {
	if _, err := base58Fixed(account, 32); err != nil {
		return nil, fmt.Errorf("solana: %q is not an account address: %w", account, err)
	}
	if until != "" {
		if _, err := base58Fixed(until, 64); err != nil {
			return nil, fmt.Errorf("solana: %q is not a transaction signature: %w", until, err)
		}
	}
	var out []SolanaSignatureInfo
	seen := map[string]bool{}
	before := ""
	for {
		page, err := solanaHistoryPageBefore(ctx, c, account, before)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if s.Signature == until {
				return out, nil
			}
			if seen[s.Signature] || (len(out) > 0 && s.Slot > out[len(out)-1].Slot) {
				return nil, fmt.Errorf("solana: getSignaturesForAddress %s: %w: %s out of order", account, ErrMalformed, s.Signature)
			}
			seen[s.Signature] = true
			out = append(out, s)
		}
		if len(page) < solanaHistoryPage {
			return out, nil
		}
		before = page[len(page)-1].Signature
	}
}

// solanaHistoryPageBefore reads one page of account's history, the
// transactions before the signature before ("" from the newest).
func solanaHistoryPageBefore(ctx context.Context, c Caller, account, before string) ([]SolanaSignatureInfo, error) {
	cfg := map[string]any{"limit": solanaHistoryPage, "commitment": "finalized"}
	where := account
	if before != "" {
		cfg["before"] = before
		where += " before " + before
	}
	raw, err := c.Call(ctx, "getSignaturesForAddress", account, cfg)
	if err != nil {
		return nil, fmt.Errorf("solana: getSignaturesForAddress %s: %w", where, err)
	}
	var page []struct {
		Signature string          `json:"signature"`
		Slot      *uint64         `json:"slot"`
		Err       json.RawMessage `json:"err"`
		BlockTime *int64          `json:"blockTime"`
	}
	if err := json.Unmarshal(raw, &page); err != nil || page == nil || len(page) > solanaHistoryPage {
		return nil, fmt.Errorf("solana: getSignaturesForAddress %s: %w: not a list of at most %d signatures", where, ErrMalformed, solanaHistoryPage)
	}
	out := make([]SolanaSignatureInfo, 0, len(page))
	for _, p := range page {
		if _, err := base58Fixed(p.Signature, 64); err != nil || p.Slot == nil {
			return nil, fmt.Errorf("solana: getSignaturesForAddress %s: %w: entry %q has no signature or no slot", where, ErrMalformed, p.Signature)
		}
		out = append(out, SolanaSignatureInfo{Signature: p.Signature, Slot: *p.Slot, Failed: !isNull(p.Err), BlockTime: p.BlockTime})
	}
	return out, nil
}
