// Package chainread is the one definition of how a chain's answer about an
// anchor transaction is read and judged, shared by every verifier keeper
// ships (package receipt/verify, `keeper verify`, the /verify page, which
// runs this same code compiled to WebAssembly) and by the audit
// (evlog/audit). It asks a node over JSON-RPC through a Caller and trusts
// nothing the node states that it can recompute: an EVM transaction is
// rebuilt from the node's fields, rehashed against the hash asked for, its
// chain id matched with the network's and its sender recovered from its
// signature (unprotected legacy transactions are refused); an EVM block's
// header is rehashed against its hash, so its time is the header's; a
// Solana transaction is decoded from its wire bytes, every signature
// verified, and it and its block are read at `finalized`, the slot matched.
// Payloads are the exact bytes the transaction carries: no text decoding,
// no normalisation.
//
// It imports neither go-ethereum nor solana-go, so that it compiles to a
// small WebAssembly module: Keccak-256 (x/crypto/sha3), RLP (rlp.go),
// secp256k1 recovery (decred's secp256k1, as go-ethereum's pure-Go build
// uses) and Ed25519 (the standard library) are all it needs.
package chainread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Caller makes one JSON-RPC call at one endpoint and returns its result,
// raw. A JSON-RPC error object is returned as an *RPCError.
type Caller interface {
	Call(ctx context.Context, method string, params ...any) (json.RawMessage, error)
}

// CallerFunc adapts a function to Caller.
type CallerFunc func(ctx context.Context, method string, params ...any) (json.RawMessage, error)

// Call calls f.
func (f CallerFunc) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	return f(ctx, method, params...)
}

// RPCError is a JSON-RPC error object an endpoint answered.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ErrMalformed marks an answer that does not decode or does not hash to
// what was asked: a node that lies or is broken, never a missing
// transaction.
var ErrMalformed = errors.New("malformed answer")

// Tx is what a node says about one transaction, every field either read
// from the chain's own bytes or checked against them.
type Tx struct {
	Network   string // CAIP-2 id of the node's chain ("eip155:42793", "solana:<genesis prefix>")
	Found     bool   // the node has the transaction (Solana: at finalized)
	Succeeded bool   // included and executed without error
	Final     bool   // its block is canonical and final
	// Sender is the account that signed the transaction and paid for it,
	// recovered from the transaction itself (not the node's word for it):
	// an EVM address (checksummed 0x hex), a Solana fee payer (base58).
	Sender string
	// Nonce is an EVM transaction's nonce (0 on Solana).
	Nonce uint64
	// Payloads are the exact bytes the transaction carries where an anchor
	// would: an EVM transaction's calldata (one), the data of each SPL Memo
	// instruction of a Solana transaction (in instruction order).
	Payloads  [][]byte
	Block     uint64 // block number or slot (0 while pending)
	BlockHash string // that block's hash, spelled as the chain spells it (0x hex, base58)
	// BlockTime is the block's time as the chain states it (the EVM
	// header's timestamp, rehashed against the block hash; Solana's
	// blockTime at finalized), to the second; zero when the chain states
	// none.
	BlockTime time.Time
	Detail    string // a human-readable account of the above
}

// isNull reports whether a node answered nothing: JSON null or no bytes
// (a transaction, block or receipt it does not have).
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}
