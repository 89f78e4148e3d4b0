// Package scan is what wallet backfill reads of one wallet's history on one
// network, and the rules over it: the transfers to and from the wallet, the
// fees it paid, what the chain says it holds, the Scanner interface the
// scanners (backfill/evmscan, backfill/solscan: JSON-RPC clients and nothing
// else) implement, and how a finished wallet's transactions are classified
// and its balances reconciled (finish.go). It links no store: the backfill
// activities (internal/backfill) store what the scanners find, chunk by
// chunk, together with the checkpoint that lets a retried scan resume.
package scan

import (
	"context"
	"math/big"
	"time"
)

// Networks keeper can backfill (the chain names of KEEPER_CHAINS).
const (
	Etherlink = "etherlink"
	Solana    = "solana"
)

// Kind says what moved.
type Kind string

// Transfer kinds.
const (
	KindNative Kind = "native" // the network's coin (XTZ on EtherLink, SOL)
	KindToken  Kind = "token"  // an ERC-20 Transfer event
	KindFee    Kind = "fee"    // gas or transaction fee paid by the wallet
)

// NativeAsset names the network's coin in Transfer.Asset and Holding.Asset;
// tokens are named by their contract address.
const NativeAsset = "native"

// Direction is a transfer seen from the wallet.
type Direction string

// Directions.
const (
	In   Direction = "in"
	Out  Direction = "out"
	Self Direction = "self" // from the wallet to itself: no balance change
)

// Transfer is one movement of value to or from the wallet. (Tx, Kind, Index)
// is unique per wallet and network: Index is the log index of a token
// transfer, the wallet's account index in a Solana transaction, 0 otherwise.
type Transfer struct {
	Tx        string
	Kind      Kind
	Index     int
	Asset     string
	From, To  string
	Amount    *big.Int // > 0
	Direction Direction
	Block     uint64 // block number or slot
	BlockTime time.Time
}

// Cursor is a scan's checkpoint. EVM: Block is the next block to scan.
// Solana: Sig is the newest signature stored and Block its slot.
type Cursor struct {
	Block uint64
	Sig   string
}

// Job is one scan: the wallet, the first block (or slot) of its history to
// look at, the last one (the finalized head when the run began), and where an
// earlier attempt stopped.
type Job struct {
	Wallet  string
	Start   uint64
	Target  uint64
	From    Cursor // EVM: From.Block ≥ Start; Solana: From.Sig empty on a fresh scan
	Scanned uint64 // units (blocks, signatures) scanned before From, for progress
}

// Chunk is what a scanner hands over after each stretch of history, oldest
// first: its transfers and the cursor after them. Storing a chunk stores both
// in one transaction, so a resumed scan neither skips nor repeats work.
type Chunk struct {
	Transfers []Transfer
	Cursor    Cursor
	Scanned   uint64 // units scanned so far, including Job.Scanned
	Total     uint64 // units this scan will have covered when done (0: not known yet)
}

// Holding is what the chain says the wallet holds of one asset after a block.
type Holding struct {
	Asset  string
	Amount *big.Int
	Known  bool   // false when the node cannot tell (e.g. it pruned that block's state)
	Pruned bool   // not known because the node no longer has (or never had) that block's state
	Detail string // why not known
}

// ArchiveSetting names the setting of a network's archive endpoint (one
// that keeps every block's state), where a node that keeps recent state
// only cannot say what a wallet held long ago (docs/backfill.md, "Balances
// on a node that keeps recent state only"); "" for a network without one.
func ArchiveSetting(network string) string {
	if network == Etherlink {
		return "KEEPER_EVM_ARCHIVE_RPC_URL"
	}
	return ""
}

// CallTimeout bounds one attempt of one scanner read (a JSON-RPC call or
// batch): a node that stops answering fails the attempt instead of holding
// the scan (and its heartbeats) forever.
var CallTimeout = time.Minute

// Scanner reads one network's history. Implementations are safe for
// concurrent use and retry their reads themselves: every call is an
// idempotent read, so a blip is retried with retry.Read (at most 3 attempts,
// 100–250 ms apart, each bounded by CallTimeout; docs/retries.md, upstream).
// What still fails fails the scan attempt, and the backfill schedule takes
// over (docs/retries.md, backfill). Errors they return are worth a later
// retry unless retry.IsPermanent says otherwise.
type Scanner interface {
	// Network is the chain name ("etherlink", "solana").
	Network() string
	// Unit is what progress counts: "blocks" or "signatures".
	Unit() string
	// ParseAddress checks an address for this network and returns its
	// canonical form; a bad one is a permanent error.
	ParseAddress(s string) (string, error)
	// Finalized is the newest final block (or slot).
	Finalized(ctx context.Context) (uint64, error)
	// Scan reads the job's history oldest first and calls emit once per
	// chunk; an error from emit ends the scan with that error.
	Scan(ctx context.Context, job Job, emit func(Chunk) error) error
	// Holdings reads the wallet's balance of each asset after block (or
	// slot) at. Of a block whose state the node no longer has, a Holding
	// is Pruned and not Known; a scanner with an archive endpoint reads it
	// there instead, and fails with a permanent error naming the setting
	// when the archive has not got it either.
	Holdings(ctx context.Context, wallet string, at uint64, assets []string) ([]Holding, error)
}
