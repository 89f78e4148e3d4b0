package audit

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// keeperMark is what every keeper payload starts with: a payload that holds
// it anywhere and is not exactly one of keeper's is a finding (KindPayload).
const keeperMark = "keeper:"

// JudgeTransaction judges one transaction as every verifier of keeper's
// receipts reads it (conformance/README.md, Audit findings): tx as
// package chainread read it from chain (its sender recovered from its
// signature, its payloads the exact bytes it carries), ref its hash or
// signature (for the findings' text). It returns nothing for a
// transaction no listed account sent (anyone may write to keeper's
// accounts: docs/log.md, Trust), or one the chain does not hold as
// succeeded, which no verifier accepts. Otherwise:
//
//   - KindPayload: a payload holds "keeper:" and none is exactly a keeper
//     anchor payload (receipt.ParseEVMPayload, receipt.ParseSolanaPayload),
//     or more than one is (an anchor carries exactly one);
//   - KindBatch: a batch payload (receipt version 1 and 2) that the root
//     does not admit (trust.Root.AdmitBatch: sent on or after the log
//     began, or by an account a batch anchor may not come from);
//   - KindKey: a checkpoint payload naming another key than key;
//   - KindAccount: a checkpoint payload of a size the root does not list
//     the sender for (trust.Root.Allows);
//   - KindFork: a checkpoint payload of a size the log signed with another
//     root; signed holds the roots of the checkpoints the log signed, by
//     size (nil: not checked here).
//
// An account is listed when the root names it on the transaction's
// network, whatever its sizes: a retired account's later anchors are
// judged, and found (KindAccount).
func JudgeTransaction(root trust.Root, key evlog.Key, chain, ref string, tx chainread.Tx, signed map[uint64][32]byte) []Finding {
	if !tx.Found || !tx.Succeeded || !listed(root, chain, tx.Network, tx.Sender) {
		return nil
	}
	var out []Finding
	find := func(kind, format string, args ...any) {
		out = append(out, Finding{Kind: kind, Chain: chain, Detail: fmt.Sprintf("tx %s from %s: ", ref, tx.Sender) + fmt.Sprintf(format, args...)})
	}
	p, n := anchorPayload(tx.Network, tx.Payloads)
	switch {
	case n > 1:
		find(KindPayload, "it carries %d keeper anchor payloads, and an anchor carries exactly one", n)
		return out
	case n == 0:
		for _, b := range tx.Payloads {
			if bytes.Contains(b, []byte(keeperMark)) {
				find(KindPayload, "it carries %q, which holds %q and is not exactly a keeper anchor payload", clip(b), keeperMark)
				break
			}
		}
		return out
	}
	switch c := p.Checkpoint; {
	case c == nil && tx.BlockTime.IsZero():
		find(KindBatch, "a batch anchor in a block that states no time, so not one shown to be before the log began")
	case c == nil:
		if err := root.AdmitBatch(chain, tx.Network, tx.Sender, tx.BlockTime); err != nil {
			find(KindBatch, "a batch anchor that does not count: %v", err)
		}
	case c.KeyHash != key.Hash:
		find(KindKey, "commits to a checkpoint of %d entries signed with key hash %08x, not the log's %08x", c.Size, c.KeyHash, key.Hash)
	default:
		if ok, why := root.Allows(chain, tx.Network, tx.Sender, int64(min(c.Size, 1<<63-1))); !ok {
			find(KindAccount, "%s", why)
		}
		if r, ok := signed[c.Size]; ok && r != c.Root {
			find(KindFork, "commits to a checkpoint of %d entries with root %x, and the log signed that size with root %x", c.Size, c.Root[:8], r[:8])
		}
	}
	return out
}

// listed reports whether root lists address on network (chain's), with
// any sizes.
func listed(root trust.Root, chain, network, address string) bool {
	if address == "" {
		return false
	}
	for _, a := range root.On(chain, network) {
		if trust.SameAddress(a.Address(), address) {
			return true
		}
	}
	return false
}

// anchorPayload is the anchor payload of a transaction on network as
// every verifier reads it (receipt/verify): its payloads (EVM calldata,
// Solana memos) read as keeper anchor payloads, exact bytes, of which
// exactly one must be one. n is how many are; p is the one when n is 1.
func anchorPayload(network string, payloads [][]byte) (p receipt.Payload, n int) {
	for _, b := range payloads {
		var (
			got receipt.Payload
			err error
		)
		if strings.HasPrefix(network, "solana:") {
			got, err = receipt.ParseSolanaPayload(string(b))
		} else {
			got, err = receipt.ParseEVMPayload(b)
		}
		if err == nil {
			p, n = got, n+1
		}
	}
	return p, n
}

// clip is at most 80 bytes of p, for a finding's text.
func clip(p []byte) string {
	if len(p) > 80 {
		return string(p[:80]) + "…"
	}
	return string(p)
}
