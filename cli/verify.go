package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// lookups are the chains `keeper verify` reads (package verify's; tests add
// their own).
var lookups = maps.Clone(verify.Lookups)

// defaultRPC is the endpoint asked for a chain when --rpc names none: the
// environment's (KEEPER_EVM_RPC_URL, KEEPER_SOLANA_RPC_URL), else the local
// dev chain's.
var defaultRPC = map[string]func() string{
	"etherlink": func() string { return envOr("KEEPER_EVM_RPC_URL", "http://127.0.0.1:8545") },
	"solana":    func() string { return envOr("KEEPER_SOLANA_RPC_URL", "http://127.0.0.1:8899") },
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// VerifyReceipt checks every anchor of a receipt with package verify. rpc
// maps chain names to endpoints (missing: the default).
func VerifyReceipt(ctx context.Context, r receipt.Receipt, rpc map[string]string) []verify.Result {
	endpoints := map[string]string{}
	for _, a := range r.Anchors {
		if url := rpc[a.Chain]; url != "" {
			endpoints[a.Chain] = url
		} else if def, ok := defaultRPC[a.Chain]; ok {
			endpoints[a.Chain] = def()
		}
	}
	return verify.Receipt(ctx, r, verify.Options{RPC: endpoints, Lookups: lookups})
}

func verifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify RECEIPT.json",
		Short: "Check a receipt (version 1 or 2) against the chains themselves, without trusting keeper (exit 0 only if every check passes); FILE.receipt.json also checks FILE beside it",
		Args:  cobra.ExactArgs(1),
	}
	rpcFlags := cmd.Flags().StringArray("rpc", nil, "RPC endpoint: URL (receipts with one chain) or CHAIN=URL, repeatable")
	file := cmd.Flags().String("file", "", "the original file: check that it hashes to the receipt's digest (default: FILE for a receipt named FILE.receipt.json)")
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
		if *file == "" {
			if *file = besideReceipt(args[0]); *file != "" {
				if _, err := os.Stat(*file); err != nil {
					return fmt.Errorf("cannot read %s, the file %s is for: %w (give the original with --file)", *file, args[0], unwrapPathError(err))
				}
			}
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "evidence %s, digest %s (receipt version %d)\n", r.EvidenceID, r.Digest, r.Version)
		if *file != "" {
			if err := checkFile(r, *file); err != nil {
				fmt.Fprintf(out, "  %-10s FAIL  %v\n", "file", err)
				return fmt.Errorf("verify: %s does not match the receipt", *file)
			}
			fmt.Fprintf(out, "  %-10s ok    %s hashes to the digest\n", "file", *file)
		}
		checks := VerifyReceipt(cmd.Context(), r, rpc)
		failed := 0
		for _, c := range checks {
			if c.OK {
				fmt.Fprintf(out, "  %-10s ok    %s\n", c.Chain, c.Detail)
			} else {
				failed++
				fmt.Fprintf(out, "  %-10s FAIL  %s\n", c.Chain, c.Failed())
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

// besideReceipt is the file a receipt named FILE.receipt.json is for:
// FILE, beside it ("" for another name, and for <evidence id>.receipt.json,
// the name the API gives a downloaded receipt).
func besideReceipt(path string) string {
	file, ok := strings.CutSuffix(path, receiptSuffix)
	if !ok || file == "" || strings.HasSuffix(file, string(filepath.Separator)) || evidenceIDName.MatchString(filepath.Base(file)) {
		return ""
	}
	return file
}

var evidenceIDName = regexp.MustCompile(`^ev_[0-9a-f]{24}$`)

func checkFile(r receipt.Receipt, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: cannot read %s: %w", verify.CheckDigest, path, unwrapPathError(err))
	}
	defer f.Close()
	return verify.File(r, f)
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
