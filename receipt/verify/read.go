package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/receipt"
)

// EVMConfirmations is how deep a block must be for an EVM node without the
// `finalized` block tag to call it final.
const EVMConfirmations = chainread.EVMConfirmations

// Tx is what a chain's node says about an anchor transaction, read and
// judged by package chainread (every field recomputed from the chain's
// own bytes or checked against them), with its payload read as a keeper
// anchor.
type Tx struct {
	Network   string          // CAIP-2 id of the node's chain ("eip155:42793", "solana:…")
	Found     bool            // the node has the transaction
	Succeeded bool            // included and executed without error
	Final     bool            // its block is canonical and final
	Payload   receipt.Payload // what its payload commits to (zero when none: see HasPayload)
	// HasPayload says the transaction carries exactly one keeper anchor
	// payload, byte for byte (EVM: its calldata; Solana: one SPL Memo).
	HasPayload bool
	Root       [32]byte // Payload.Root
	// Sender is the account that signed the transaction and paid for it,
	// recovered from the transaction itself (not the node's word for it):
	// an EVM address (checksummed 0x hex), a Solana fee payer (base58).
	Sender    string
	Block     uint64 // block number or slot (0 while pending)
	BlockHash string // that block's hash, spelled as the chain spells it
	// BlockTime is the block's time as the chain states it (the EVM
	// header's timestamp, rehashed against the block's hash; Solana's
	// blockTime at finalized), to the second; zero when the chain states
	// none.
	BlockTime time.Time
	Detail    string // a human-readable account of the above
}

// Lookup asks the node at rpcURL about one transaction. A transaction the
// node does not have is Found false and no error; errors are for bad input
// and failed or inconsistent answers.
type Lookup func(ctx context.Context, rpcURL, txRef string) (Tx, error)

// Reader asks a node, through c, about one transaction of its chain.
type Reader func(ctx context.Context, c chainread.Caller, txRef string) (Tx, error)

// Readers are the chains this package reads, by receipt chain name.
var Readers = map[string]Reader{
	"etherlink": ReadEVM,
	"solana":    ReadSolana,
}

// ReadEVM asks an EVM node (EtherLink) about transaction ref (0x hex
// hash) with chainread.EVM and reads its calldata as a keeper payload.
func ReadEVM(ctx context.Context, c chainread.Caller, ref string) (Tx, error) {
	h, err := chainread.EVMHash(ref)
	if err != nil {
		return Tx{}, err
	}
	t, err := chainread.EVM(ctx, c, h)
	return fromRead(t, receipt.ParseEVMPayload), err
}

// ReadSolana asks a Solana node about the transaction with signature ref
// with chainread.Solana and reads its SPL Memo instructions as a keeper
// payload.
func ReadSolana(ctx context.Context, c chainread.Caller, ref string) (Tx, error) {
	sig, err := chainread.SolanaSignature(ref)
	if err != nil {
		return Tx{}, err
	}
	t, err := chainread.Solana(ctx, c, sig)
	return fromRead(t, func(b []byte) (receipt.Payload, error) { return receipt.ParseSolanaPayload(string(b)) }), err
}

// fromRead is t with its payloads read: the transaction carries a keeper
// anchor only when exactly one of them is a payload, exactly.
func fromRead(t chainread.Tx, parse func([]byte) (receipt.Payload, error)) Tx {
	v := Tx{Network: t.Network, Found: t.Found, Succeeded: t.Succeeded, Final: t.Final, Sender: t.Sender,
		Block: t.Block, BlockHash: t.BlockHash, BlockTime: t.BlockTime, Detail: t.Detail}
	var found []receipt.Payload
	for _, b := range t.Payloads {
		if p, err := parse(b); err == nil {
			found = append(found, p)
		}
	}
	switch {
	case !t.Found:
	case len(found) == 1:
		v.Payload, v.Root, v.HasPayload = found[0], found[0].Root, true
	case len(found) == 0:
		v.Detail = joinDetail(v.Detail, "the transaction carries no keeper anchor payload")
	default:
		v.Detail = joinDetail(v.Detail, fmt.Sprintf("%d keeper anchor payloads in one transaction", len(found)))
	}
	return v
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
