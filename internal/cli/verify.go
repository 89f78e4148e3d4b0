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

	"github.com/keeperhq/keeper/evlog"
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

// LogKeyEnv is the environment variable that pins the evidence log's key
// for `keeper verify` when --log-key is not given.
const LogKeyEnv = "KEEPER_LOG_PUBLIC_KEY"

// VerifyReceipt checks every anchor of a receipt with package verify. rpc
// maps chain names to endpoints (missing: the default); a version 3
// receipt's checkpoint is checked with the key it carries.
func VerifyReceipt(ctx context.Context, r receipt.Receipt, rpc map[string]string) []verify.Result {
	endpoints := map[string][]string{}
	for chain, url := range rpc {
		endpoints[chain] = []string{url}
	}
	return verifyWith(ctx, r, endpoints, "")
}

// verifyWith checks r asking every endpoint of each chain (a chain without
// one: the default), with the log key pinned when logKey is set.
func verifyWith(ctx context.Context, r receipt.Receipt, endpoints map[string][]string, logKey string) []verify.Result {
	o := verify.Options{Endpoints: map[string][]string{}, LogKey: logKey, Lookups: lookups}
	for _, a := range r.Anchors {
		if urls := endpoints[a.Chain]; len(urls) > 0 {
			o.Endpoints[a.Chain] = urls
		} else if def, ok := defaultRPC[a.Chain]; ok {
			o.Endpoints[a.Chain] = []string{def()}
		}
	}
	return verify.Receipt(ctx, r, o)
}

func verifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "verify RECEIPT",
		Short: "Check a receipt (version 1, 2 or 3, as JSON or a .tlog-proof) against the chains themselves, without trusting keeper " +
			"(exit 0 only if every check passes); FILE.receipt.json or FILE.tlog-proof also checks FILE beside it",
		Args: cobra.ExactArgs(1),
	}
	rpcFlags := cmd.Flags().StringArray("rpc", nil, "RPC endpoint: URL (receipts with one chain) or CHAIN=URL, repeatable; "+
		"a chain given several endpoints has every one asked, and they must agree")
	logKeyFlag := cmd.Flags().String("log-key", "", "the evidence log's public key (its /log/key: ORIGIN+HASH+KEY) or a file holding it; "+
		"default $"+LogKeyEnv+"; without one a version 3 receipt is checked with the key it carries, with a warning")
	file := cmd.Flags().String("file", "", "the original file: check that it hashes to the receipt's digest (default: FILE for a receipt named FILE.receipt.json or FILE.tlog-proof)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		raw, err := readReceipt(args[0])
		if err != nil {
			return err
		}
		var r receipt.Receipt
		if receipt.IsTLogProof(raw) {
			r, err = receipt.ParseTLogProof(raw)
		} else {
			r, err = receipt.Parse(raw)
		}
		if err != nil {
			return err
		}
		logKey, err := pinnedLogKey(*logKeyFlag)
		if err != nil {
			return err
		}
		endpoints := map[string][]string{}
		for _, f := range *rpcFlags {
			if name, url, ok := strings.Cut(f, "="); ok && !strings.Contains(name, "/") {
				endpoints[name] = append(endpoints[name], url)
			} else if len(r.Anchors) == 1 {
				endpoints[r.Anchors[0].Chain] = append(endpoints[r.Anchors[0].Chain], f)
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
		checks := verifyWith(cmd.Context(), r, endpoints, logKey)
		if len(checks) > 0 && checks[0].Warning != "" {
			fmt.Fprintf(out, "  warning: %s, with --log-key or $%s\n", checks[0].Warning, LogKeyEnv)
		}
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

// pinnedLogKey is the log key to pin: the flag's, else the environment's,
// either the key itself or a file holding it ("" when neither is set).
func pinnedLogKey(flag string) (string, error) {
	from, value := "--log-key", strings.TrimSpace(flag)
	if value == "" {
		from, value = "$"+LogKeyEnv, strings.TrimSpace(os.Getenv(LogKeyEnv))
	}
	if value == "" {
		return "", nil
	}
	if _, err := evlog.ParseKey(value); err == nil {
		return value, nil
	}
	b, err := os.ReadFile(value)
	if err != nil {
		// The value is not echoed: it may be a signing key given by mistake.
		return "", fmt.Errorf("%s: neither a log key (ORIGIN+HASH+KEY, as /log/key serves it) nor a readable file holding one", from)
	}
	k, err := evlog.ParseKey(string(b))
	if err != nil {
		return "", fmt.Errorf("%s: %s does not hold a log key (ORIGIN+HASH+KEY, as /log/key serves it)", from, value)
	}
	return k.Text, nil
}

// tlogProofSuffix names a receipt written as a C2SP tlog-proof beside its
// file, as the spec suggests.
const tlogProofSuffix = ".tlog-proof"

// besideReceipt is the file a receipt named FILE.receipt.json or
// FILE.tlog-proof is for: FILE, beside it ("" for another name, and for
// <evidence id>.receipt.json, the name the API gives a downloaded receipt).
func besideReceipt(path string) string {
	file, ok := strings.CutSuffix(path, receiptSuffix)
	if !ok {
		file, ok = strings.CutSuffix(path, tlogProofSuffix)
	}
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
