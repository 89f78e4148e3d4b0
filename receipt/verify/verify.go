// Package verify checks a keeper receipt against the chains themselves,
// without trusting keeper: the Merkle proof from the evidence to the
// anchored root, then, over each chain's public JSON-RPC, that the node is on
// the receipt's network, that the transaction exists, carries that root,
// succeeded, is final, and sits in the receipt's block. It depends on
// nothing of keeper's server: other Go programs import it to check receipts
// they were handed (`keeper verify` is one of them).
package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/redact"
)

// The checks, in the order they are made. A Result that failed names one.
const (
	CheckDigest      = "digest"      // the original file hashes to the receipt's digest
	CheckProof       = "proof"       // leaf, index, path and root fit together
	CheckChain       = "chain"       // the verifier can read this chain at all
	CheckNetwork     = "network"     // the node is on the anchor's network (v2)
	CheckTransaction = "transaction" // the node has the transaction
	CheckPayload     = "payload"     // the transaction carries the anchor's root
	CheckStatus      = "status"      // it succeeded
	CheckFinality    = "finality"    // its block is final
	CheckBlock       = "block"       // it is in the anchor's block (number and, v2, hash)
)

// Tx is what a chain's node says about an anchor transaction.
type Tx struct {
	Network   string   // CAIP-2 id of the node's chain ("eip155:42793", "solana:…")
	Found     bool     // the node has the transaction
	Succeeded bool     // included and executed without error
	Final     bool     // its block is canonical and final
	Root      [32]byte // the root its payload carries (zero when none)
	Block     uint64   // block number or slot (0 while pending)
	BlockHash string   // that block's hash, spelled as the chain spells it
	Detail    string   // a human-readable account of the above
}

// Lookup asks the node at rpcURL about one transaction. A transaction the
// node does not have is Found false and no error; errors are for bad input,
// transactions that are not keeper anchors, and failed calls.
type Lookup func(ctx context.Context, rpcURL, txRef string) (Tx, error)

// Lookups are the chains this package reads, by receipt chain name.
var Lookups = map[string]Lookup{
	"etherlink": EVM,
	"solana":    Solana,
}

// Options say where to ask.
type Options struct {
	// RPC maps a chain name to its JSON-RPC endpoint. A chain without one
	// fails with CheckChain.
	RPC map[string]string
	// Lookups replaces the package's Lookups (tests, other chains).
	Lookups map[string]Lookup
	// Timeout bounds each anchor's lookups; default 30 s.
	Timeout time.Duration
}

// Result is the outcome for one anchor of a receipt.
type Result struct {
	Chain   string
	Network string // the anchor's network, or the node's for a v1 receipt
	OK      bool
	Check   string // the check that failed (one of the Check constants)
	Reason  string // why it failed
	Detail  string // what was checked, when OK
}

// Failed is the failure as one line: "check: reason" ("" when OK).
func (r Result) Failed() string {
	if r.OK {
		return ""
	}
	return r.Check + ": " + r.Reason
}

// Receipt checks every anchor of r and returns one Result per anchor, in the
// receipt's order. The receipt is trusted for nothing: each anchor passes
// only if its chain confirms it.
func Receipt(ctx context.Context, r receipt.Receipt, o Options) []Result {
	out := make([]Result, 0, len(r.Anchors))
	for _, a := range r.Anchors {
		out = append(out, Anchor(ctx, r, a, o))
	}
	return out
}

// Anchor checks one anchor of r.
func Anchor(ctx context.Context, r receipt.Receipt, a receipt.Anchor, o Options) Result {
	res := Result{Chain: a.Chain, Network: a.Network}
	fail := func(check, format string, args ...any) Result {
		res.Check, res.Reason = check, fmt.Sprintf(format, args...)
		return res
	}
	if err := r.CheckProof(a); err != nil {
		return fail(CheckProof, "%v (digest, leaf index, path and root do not fit together)", err)
	}
	lookups := o.Lookups
	if lookups == nil {
		lookups = Lookups
	}
	lookup, ok := lookups[a.Chain]
	if !ok {
		if a.Chain == "stub" {
			return fail(CheckChain, "stub anchors live only inside the keeper process that made them; there is no chain to check")
		}
		return fail(CheckChain, "this verifier does not know chain %q", a.Chain)
	}
	url := o.RPC[a.Chain]
	if url == "" {
		return fail(CheckChain, "no RPC endpoint given for %s", a.Chain)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := lookup(ctx, url, a.TxRef)
	want, _ := a.RootBytes()   // CheckProof parsed it
	url = redact.Endpoint(url) // for messages: providers put API keys in URLs
	switch {
	case err != nil && got.Network == "":
		return fail(CheckTransaction, "could not read %s from %s: %v", a.TxRef, url, err)
	case a.Network != "" && got.Network != a.Network:
		return fail(CheckNetwork, "the node at %s is on %s, the anchor is on %s", url, got.Network, a.Network)
	case err != nil:
		return fail(CheckTransaction, "could not read %s from %s: %v", a.TxRef, url, err)
	case !got.Found:
		return fail(CheckTransaction, "%s is not on %s (asked %s)", a.TxRef, got.Network, url)
	case got.Root != want:
		return fail(CheckPayload, "transaction %s carries root %x, the receipt says %s", a.TxRef, got.Root, a.Root)
	case !got.Succeeded:
		return fail(CheckStatus, "transaction %s failed on chain: %s", a.TxRef, got.Detail)
	case !got.Final:
		return fail(CheckFinality, "transaction %s is included (block %d) but not final yet: %s", a.TxRef, got.Block, got.Detail)
	case a.Block != 0 && got.Block != a.Block:
		return fail(CheckBlock, "transaction %s is in block %d, the receipt says %d", a.TxRef, got.Block, a.Block)
	case a.BlockHash != "" && got.BlockHash != a.BlockHash:
		return fail(CheckBlock, "block %d's hash is %s, the receipt says %s", got.Block, got.BlockHash, a.BlockHash)
	}
	res.OK = true
	res.Network = got.Network
	res.Detail = fmt.Sprintf("%s tx %s, block %d, final; root %s… holds leaf %d of %d", got.Network, a.TxRef, got.Block, a.Root[:16], a.LeafIndex, a.TreeSize)
	return res
}

// File checks that the original file hashes (SHA-256) to the receipt's
// digest; a mismatch is a CheckDigest failure.
func File(r receipt.Receipt, file io.Reader) error {
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return fmt.Errorf("%s: cannot read the file: %w", CheckDigest, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(r.Digest) {
		return fmt.Errorf("%s: the file hashes to %s, the receipt's digest is %s", CheckDigest, got, r.Digest)
	}
	return nil
}
