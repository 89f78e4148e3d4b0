// Package chains defines the one small interface every anchoring chain adapter
// implements (stub, EtherLink, Solana). Adapters mark failures that retrying
// cannot fix with retry.Permanent (package github.com/keeperhq/keeper/internal/retry).
package chains

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/keeperhq/keeper/receipt"
)

// Anchor is what a batch writes on chain: a checkpoint of keeper's
// evidence log (receipt version 3), or, for a batch first submitted before
// the log, its own Merkle root.
type Anchor struct {
	BatchID    int64
	Root       [32]byte               // the root either way
	Checkpoint *receipt.CheckpointRef // nil: a batch root
	// Advance, when set, moves the batch to the log's newest checkpoint and
	// returns the anchor it then commits to. An adapter calls it (through
	// Advanced) right before it signs a transaction that takes a place of
	// its own on the chain (an EVM nonce, a Solana blockhash) for a batch
	// none of whose transactions can land: its first, or one after the
	// earlier ones' nonce was taken or blockhash expired unseen. Called
	// under the signer's lock, it keeps a chain's anchors in the order of
	// the trees they commit to: a batch whose first submit fixed a
	// checkpoint and then waited (a crash, a lost send, a slow worker)
	// never lands a smaller tree after a bigger one. A replacement on the
	// same nonce keeps its place, and its anchor.
	Advance func(ctx context.Context) (Anchor, error)
}

// Advanced is the anchor the batch commits to after Advance, or a itself
// when it has no Advance (a batch root, or a test's anchor).
func (a Anchor) Advanced(ctx context.Context) (Anchor, error) {
	if a.Advance == nil {
		return a, nil
	}
	next, err := a.Advance(ctx)
	if err != nil {
		return a, fmt.Errorf("move batch %d to the newest checkpoint: %w", a.BatchID, err)
	}
	return next, nil
}

// MovedOnFrom reports whether payload, journaled for a's batch, commits to
// an older checkpoint of the same log than a does: the one the batch was
// moved on from (Advance) before its new transaction was journaled.
func (a Anchor) MovedOnFrom(p receipt.Payload) bool {
	return a.Checkpoint != nil && p.Checkpoint != nil &&
		p.Checkpoint.KeyHash == a.Checkpoint.KeyHash && p.Checkpoint.Size < a.Checkpoint.Size
}

// Calldata is the EVM calldata carrying the anchor.
func (a Anchor) Calldata() []byte {
	if a.Checkpoint != nil {
		return receipt.EVMCheckpointCalldata(*a.Checkpoint)
	}
	return receipt.EVMCalldata(a.Root)
}

// Memo is the Solana memo carrying the anchor.
func (a Anchor) Memo() string {
	if a.Checkpoint != nil {
		return receipt.SolanaCheckpointMemoForBatch(*a.Checkpoint, a.BatchID)
	}
	return receipt.SolanaMemo(a.Root)
}

// TxRecord is one signed transaction an adapter built for a batch. Adapters
// save it through the Journal before broadcasting, so a retried submit after a
// crash rebroadcasts the same transaction instead of creating a second one.
type TxRecord struct {
	BatchID   int64
	Chain     string
	Ref       string          // the chain's transaction id (EVM hash, Solana signature)
	Raw       []byte          // the signed transaction, as broadcast
	Meta      json.RawMessage // adapter-specific (nonce, fees, blockhash, expiry height)
	CreatedAt time.Time
}

// Journal persists the transactions built for a batch. keeper's is
// anchor.Journal, over its store.
type Journal interface {
	// Transactions returns every record saved for the batch, oldest first.
	Transactions(ctx context.Context, batchID int64) ([]TxRecord, error)
	// SaveTransaction records a transaction before it is broadcast.
	SaveTransaction(ctx context.Context, rec TxRecord) error
	// Unconfirmed returns every record saved on chain for batches not yet
	// confirmed (dead-lettered ones included: their transactions may still
	// hold a nonce), oldest first. An adapter whose signer's nonces are
	// shared by all batches reads it to rebroadcast another batch's
	// transaction that a later nonce waits behind.
	Unconfirmed(ctx context.Context, chain string) ([]TxRecord, error)
}

// State is where a transaction stands on its chain.
type State int

const (
	// Pending: broadcast, not yet final (or not yet seen).
	Pending State = iota
	// Final: included and final by the adapter's finality rule.
	Final
	// Dropped: the chain will never include this transaction as broadcast
	// (evicted, expired blockhash, reorged out); the batch must be submitted again.
	Dropped
	// Failed: included but reverted/errored; permanent for this payload.
	Failed
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Final:
		return "final"
	case Dropped:
		return "dropped"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Status is the answer to one status lookup.
type Status struct {
	State     State
	Ref       string    // the transaction that reached this state (for adapters that re-sign)
	Block     uint64    // block number or slot, when included
	BlockTime time.Time // when included
	BlockHash string    // the including block's hash, as the chain spells it (Final)
	Finality  string    // the rule that made it Final: "finalized", "confirmed", "confirmations:N"
	Detail    string    // chain's error text for Failed/Dropped
}

// Adapter anchors roots on one chain. Implementations must be safe for
// concurrent use.
type Adapter interface {
	// Name is the chain name users put in "chains" ("stub", "etherlink", "solana").
	Name() string
	// Submit broadcasts the anchor transaction for a batch and returns its ref.
	// It is idempotent per batch: when the journal already holds a transaction
	// for the batch, that transaction is rebroadcast rather than a new one made.
	Submit(ctx context.Context, a Anchor, j Journal) (string, error)
	// Status looks up the transaction(s) of a batch.
	Status(ctx context.Context, batchID int64, j Journal) (Status, error)
	// Ping checks the chain is reachable (readiness).
	Ping(ctx context.Context) error
}

// Networked is implemented by adapters that know which network their node is
// on, as a CAIP-2 id ("eip155:42793", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
// read from the node itself (eth_chainId, getGenesisHash), not from config.
// Receipts name it, so a verifier can tell mainnet from a test network.
type Networked interface {
	Network(ctx context.Context) (string, error)
}

// NetworkOf is a's network, or "" for an adapter that names none.
func NetworkOf(ctx context.Context, a Adapter) (string, error) {
	n, ok := a.(Networked)
	if !ok {
		return "", nil
	}
	return n.Network(ctx)
}

// Accounted is implemented by adapters that send from one account: the
// EVM signer's address, the Solana fee payer. Receipts name it, and
// verifiers check that the anchor was sent by it.
type Accounted interface {
	Account() string
}

// AccountOf is a's sending account, or "" for an adapter that names none.
func AccountOf(a Adapter) string {
	if n, ok := a.(Accounted); ok {
		return n.Account()
	}
	return ""
}

// Paced is implemented by adapters whose Status waits for the chain's next
// poll round (a new block, or the poll interval) before it answers, as the
// batched status pollers do. A caller may then ask again at once: it costs no
// extra calls, and finality is seen on the first round after it.
type Paced interface {
	PacedStatus() bool
}

// IsPaced reports whether a's Status paces itself.
func IsPaced(a Adapter) bool {
	p, ok := a.(Paced)
	return ok && p.PacedStatus()
}

// AnchorReader is implemented by adapters that can read back, from the
// chain alone, the latest log checkpoints their account anchored: a keeper
// whose store was lost checks its log against them before it signs again.
type AnchorReader interface {
	LatestCheckpoints(ctx context.Context) ([]receipt.CheckpointRef, error)
}

// Funded is implemented by adapters whose anchors are paid from one
// account: the EVM signer, the Solana fee payer. Balance is that account's
// balance in the chain's smallest unit (wei, lamports), so an operator sees
// the fee account run dry before the first anchor fails for want of funds.
type Funded interface {
	Balance(ctx context.Context) (*big.Int, error)
}
