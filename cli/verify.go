package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/chains"
	"github.com/keeperhq/keeper/receipt"
)

// ChainVerifier reads anchors of one chain from its RPC endpoint.
type ChainVerifier struct {
	Verify     chains.VerifyFunc
	DefaultRPC func() string // from the environment or the local dev chain
}

// Verifiers are the chains `keeper verify` can check, by chain name.
var Verifiers = map[string]ChainVerifier{}

// AnchorCheck is the outcome of verifying one anchor of a receipt.
type AnchorCheck struct {
	Chain  string
	OK     bool
	Failed string // which check failed, and why
	Detail string // what was checked, for the summary line
}

// VerifyReceipt checks every anchor of a receipt: the Merkle proof, then, on
// the chain itself, that the transaction exists, carries the root, succeeded
// and is final. rpc maps chain names to endpoints (missing: the default).
func VerifyReceipt(ctx context.Context, r receipt.Receipt, rpc map[string]string) []AnchorCheck {
	var out []AnchorCheck
	for _, a := range r.Anchors {
		out = append(out, verifyAnchor(ctx, r, a, rpc))
	}
	return out
}

func verifyAnchor(ctx context.Context, r receipt.Receipt, a receipt.Anchor, rpc map[string]string) AnchorCheck {
	c := AnchorCheck{Chain: a.Chain}
	fail := func(check, format string, args ...any) AnchorCheck {
		c.Failed = check + ": " + fmt.Sprintf(format, args...)
		return c
	}
	if err := r.CheckProof(a); err != nil {
		return fail("proof", "%v (digest, leaf index, path and root do not fit together)", err)
	}
	v, ok := Verifiers[a.Chain]
	if !ok {
		if a.Chain == "stub" {
			return fail("chain", "stub anchors live only inside the keeper process that made them; there is no chain to check")
		}
		return fail("chain", "keeper verify does not know chain %q", a.Chain)
	}
	url := rpc[a.Chain]
	if url == "" && v.DefaultRPC != nil {
		url = v.DefaultRPC()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := v.Verify(ctx, url, a.TxRef)
	switch {
	case err != nil:
		return fail("transaction", "could not read %s from %s: %v", a.TxRef, url, err)
	case !got.Found:
		return fail("transaction", "%s is not on %s (asked %s)", a.TxRef, a.Chain, url)
	case hex.EncodeToString(got.Root[:]) != strings.ToLower(a.Root):
		return fail("payload", "transaction %s carries root %x, the receipt says %s", a.TxRef, got.Root, a.Root)
	case !got.Succeeded:
		return fail("status", "transaction %s failed on chain: %s", a.TxRef, got.Detail)
	case !got.Final:
		return fail("finality", "transaction %s is included (block %d) but not final yet", a.TxRef, got.Block)
	case a.Block != 0 && got.Block != a.Block:
		return fail("block", "transaction %s is in block %d, the receipt says %d", a.TxRef, got.Block, a.Block)
	}
	c.OK = true
	c.Detail = fmt.Sprintf("tx %s, block %d, final; root %s… holds leaf %d of %d", a.TxRef, got.Block, a.Root[:16], a.LeafIndex, a.TreeSize)
	return c
}

func verifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify RECEIPT.json",
		Short: "Check a receipt against the chain itself, without trusting keeper (exit 0 only if every anchor verifies)",
		Args:  cobra.ExactArgs(1),
	}
	rpcFlags := cmd.Flags().StringArray("rpc", nil, "RPC endpoint: URL (receipts with one chain) or CHAIN=URL, repeatable")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		raw, err := readReceipt(args[0])
		if err != nil {
			return err
		}
		r, err := receipt.Parse(raw)
		if err != nil {
			return err
		}
		rpc := map[string]string{}
		for _, f := range *rpcFlags {
			if name, url, ok := strings.Cut(f, "="); ok && !strings.Contains(name, "/") {
				rpc[name] = url
			} else if len(r.Anchors) == 1 {
				rpc[r.Anchors[0].Chain] = f
			} else {
				return fmt.Errorf("--rpc %s: this receipt has %d chains; use --rpc CHAIN=URL", f, len(r.Anchors))
			}
		}
		checks := VerifyReceipt(cmd.Context(), r, rpc)
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "evidence %s, digest %s\n", r.EvidenceID, r.Digest)
		failed := 0
		for _, c := range checks {
			if c.OK {
				fmt.Fprintf(out, "  %-10s ok    %s\n", c.Chain, c.Detail)
			} else {
				failed++
				fmt.Fprintf(out, "  %-10s FAIL  %s\n", c.Chain, c.Failed)
			}
		}
		if failed > 0 {
			return fmt.Errorf("verify: %d of %d anchors failed", failed, len(checks))
		}
		fmt.Fprintf(out, "verified on %d chain(s)\n", len(checks))
		return nil
	}
	return cmd
}

func readReceipt(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
