package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// lookups are the chains `keeper verify` reads (package verify's; tests add
// their own).
var lookups = maps.Clone(verify.Lookups)

// defaultRPC is the endpoint asked for a chain when --rpc names none: the
// environment's (KEEPER_EVM_RPC_URL, KEEPER_SOLANA_RPC_URL), else the local
// dev chain's.
var defaultRPC = map[string]string{"etherlink": "http://127.0.0.1:8545", "solana": "http://127.0.0.1:8899"}

// defaultEndpoint is the endpoint of chain when none is given: the
// environment's, else the local dev chain's ("" for a chain keeper does
// not know).
func defaultEndpoint(chain string) string {
	return cmp.Or(os.Getenv(defaultEnv[chain]), defaultRPC[chain])
}

// defaultEnv names the environment variable whose endpoint a chain asks
// first when --rpc names none.
var defaultEnv = map[string]string{"etherlink": "KEEPER_EVM_RPC_URL", "solana": "KEEPER_SOLANA_RPC_URL"}

// LogKeyEnv is the environment variable that pins the evidence log's key
// for `keeper verify` when --log-key is not given.
const LogKeyEnv = "KEEPER_LOG_PUBLIC_KEY"

// VerifyReceipt checks every anchor of a receipt with package verify
// against the trust root pinned (nil: nothing is pinned, and every anchor
// fails the trust check). rpc maps chain names to endpoints (missing: the
// default).
func VerifyReceipt(ctx context.Context, r receipt.Receipt, rpc map[string]string, pinned *trust.Root) []verify.Result {
	endpoints := map[string][]string{}
	for chain, url := range rpc {
		endpoints[chain] = []string{url}
	}
	return verifyWith(ctx, r, endpoints, verify.Options{Trust: pinned}, false).Results
}

// verifyWith checks r with o's trust, asking every endpoint of each chain;
// a chain without one asks the default: the environment's endpoint, else
// the public endpoints of the anchor's network when keeper knows them
// (verify.PublicEndpoints: two for Solana mainnet-beta), else the local
// dev chain's. rpcOnly asks no default: a chain without --rpc fails the
// chain check.
func verifyWith(ctx context.Context, r receipt.Receipt, endpoints map[string][]string, o verify.Options, rpcOnly bool) verify.Report {
	o.Endpoints, o.Lookups = map[string][]string{}, lookups
	for _, a := range r.Anchors {
		switch urls := endpoints[a.Chain]; {
		case len(urls) > 0:
			o.Endpoints[a.Chain] = urls
		case rpcOnly || len(o.Endpoints[a.Chain]) > 0:
		case os.Getenv(defaultEnv[a.Chain]) != "":
			o.Endpoints[a.Chain] = []string{os.Getenv(defaultEnv[a.Chain])}
		case len(verify.PublicEndpoints[a.Network]) > 0:
			o.Endpoints[a.Chain] = verify.PublicEndpoints[a.Network]
		case defaultRPC[a.Chain] != "":
			o.Endpoints[a.Chain] = []string{defaultRPC[a.Chain]}
		}
	}
	return verify.Check(ctx, r, o)
}

// howToPin is the error of `keeper verify` with nothing pinned.
const howToPin = "trust: nothing pinned, so nothing can be verified: pin the log's trust root with --trust FILE " +
	"(saved once from its /log/trust, or `keeper log trust`), or its key and anchoring accounts with --log-key KEY " +
	"(its /log/key) and --account CHAIN=ADDRESS for each; --insecure-trust-receipt checks the receipt against itself only (docs/receipts.md)"

func verifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "verify RECEIPT",
		Short: "Check a receipt (version 1, 2 or 3, as JSON or a .tlog-proof) against the chains themselves and the trust you pin, " +
			"without trusting keeper (exit 0 only if every check passes); FILE.receipt.json or FILE.tlog-proof also checks FILE beside it",
		Args: cobra.ExactArgs(1),
	}
	rpcFlags := cmd.Flags().StringArray("rpc", nil, "RPC endpoint: URL (receipts with one chain) or CHAIN=URL, repeatable; "+
		"a chain given several endpoints has every one asked, and they must agree")
	trustFlag := cmd.Flags().String("trust", "", "the log's trust root to pin: a file holding it as JSON, or signed as /log/trust serves it "+
		"(docs/receipts.md); the receipt must be signed by its key and anchored by the accounts it lists")
	logKeyFlag := cmd.Flags().String("log-key", "", "the evidence log's public key (its /log/key: ORIGIN+HASH+KEY) or a file holding it; "+
		"default $"+LogKeyEnv+"; with --trust it must be the root's key, without it pin the anchoring accounts with --account")
	accountFlags := cmd.Flags().StringArray("account", nil, "an anchoring account to pin with --log-key: CHAIN=ADDRESS (etherlink=0x…, solana=<base58>) "+
		"or a CAIP-10 id (eip155:42793:0x…), repeatable")
	insecure := cmd.Flags().Bool("insecure-trust-receipt", false, "with nothing pinned, check the receipt against the key and accounts it names itself: "+
		"proves only that it agrees with itself and the chains, and every line says INSECURE")
	rpcOnly := cmd.Flags().Bool("rpc-only", false, "ask only the --rpc endpoints (no environment, public or local default): a chain without one fails the chain check")
	trustUpdate := cmd.Flags().String("trust-update", "", "a newer trust root (JSON or signed) to take over --trust's, only if it extends it "+
		"(every account kept, new ones starting after the ones listed): how a pinned root follows the log's growth")
	clocks := cmd.Flags().StringArray("clock", nil, "also trust this network's block times for the time bound: a CAIP-2 id (eip155:7038309) or a chain "+
		"name (etherlink, solana: whatever network its endpoints are on), repeatable; EtherLink mainnet and Solana mainnet-beta are trusted by default")
	file := cmd.Flags().String("file", "", "the original file: check that it hashes to the receipt's digest (default: FILE for a receipt named FILE.receipt.json or FILE.tlog-proof)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		raw, err := readReceipt(args[0])
		if err != nil {
			return err
		}
		r, err := verify.ReadReceipt(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", verify.CheckFormat, err)
		}
		o, pinnedBy, err := pinnedTrust(*trustFlag, *trustUpdate, *logKeyFlag, *accountFlags, *insecure)
		if err != nil {
			return err
		}
		o.Clocks = *clocks
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
		say := func(format string, args ...any) {
			if o.InsecureTrustReceipt {
				format = "INSECURE " + format
			}
			fmt.Fprintf(out, format+"\n", args...)
		}
		say("evidence %s, digest %s (receipt version %d)", r.EvidenceID, r.Digest, r.Version)
		if o.InsecureTrustReceipt {
			say("  warning: %s", verify.InsecureWarning)
		}
		if *file != "" {
			if err := checkFile(r, *file); err != nil {
				say("  %-10s FAIL  %v", "file", err)
				return fmt.Errorf("verify: %s does not match the receipt", *file)
			}
			say("  %-10s ok    %s hashes to the digest", "file", *file)
		}
		rep := verifyWith(cmd.Context(), r, endpoints, o, *rpcOnly)
		printTrust(say, o, pinnedBy, rep)
		failed := 0
		for _, c := range rep.Results {
			if c.OK {
				say("  %-10s ok    %s", c.Chain, c.Detail)
			} else {
				failed++
				say("  %-10s FAIL  %s", c.Chain, c.Failed())
			}
		}
		if !rep.OK {
			return fmt.Errorf("verify: %d of %d anchors failed", failed, len(rep.Results))
		}
		say("%s", strings.TrimPrefix(rep.Summary(), "INSECURE (nothing pinned): "))
		return nil
	}
	return cmd
}

// pinnedTrust reads what `keeper verify` is told to trust: the trust root
// of --trust, else --log-key (or $KEEPER_LOG_PUBLIC_KEY) and --account,
// else, with --insecure-trust-receipt, the receipt itself. pinnedBy says
// which, for the output. Nothing pinned is an error saying how to pin.
func pinnedTrust(trustFile, updateFile, logKeyFlag string, accounts []string, insecure bool) (o verify.Options, pinnedBy string, err error) {
	logKey, err := pinnedLogKey(logKeyFlag)
	if err != nil {
		return o, "", err
	}
	if updateFile != "" && trustFile == "" {
		return o, "", fmt.Errorf("--trust-update: give the root you pinned with --trust; an update is taken only if it extends it")
	}
	switch {
	case trustFile != "":
		if len(accounts) > 0 {
			return o, "", fmt.Errorf("--account: the trust root of --trust lists the accounts; give --account only with --log-key")
		}
		b, err := os.ReadFile(trustFile)
		if err != nil {
			return o, "", fmt.Errorf("--trust: cannot read %s: %w", trustFile, unwrapPathError(err))
		}
		var update []byte
		if updateFile != "" {
			if update, err = os.ReadFile(updateFile); err != nil {
				return o, "", fmt.Errorf("--trust-update: cannot read %s: %w", updateFile, unwrapPathError(err))
			}
		}
		root, err := verify.ReadTrust(b, update, logKey)
		if err != nil {
			return o, "", fmt.Errorf("%s: --trust %s: %w", verify.CheckTrust, trustFile, err)
		}
		o.Trust, pinnedBy = &root, "--trust "+trustFile
		if updateFile != "" {
			pinnedBy += ", updated by --trust-update " + updateFile
		}
	case logKey != "" || len(accounts) > 0:
		pinnedBy = "--log-key and --account"
		if logKey == "" { // enough for a version 1 or 2 receipt, which names no log
			o.Accounts, pinnedBy = accounts, "--account"
			for _, a := range accounts {
				if _, err := trust.ParseAccount(a); err != nil {
					return o, "", fmt.Errorf("--account: %w", err)
				}
			}
			break
		}
		root, err := trust.ShortForm(logKey, accounts)
		if err != nil {
			return o, "", fmt.Errorf("--account: %w", err)
		}
		o.Trust = &root
	case insecure:
		o.InsecureTrustReceipt, pinnedBy = true, "nothing (--insecure-trust-receipt): the receipt's own key and accounts"
	default:
		return o, "", errors.New(howToPin)
	}
	return o, pinnedBy, nil
}

// printTrust prints what the verification rested on: who pinned it, the
// full log key (origin, key hash and key) and the accounts.
func printTrust(say func(string, ...any), o verify.Options, pinnedBy string, rep verify.Report) {
	say("  %-10s pinned by %s", "trust", pinnedBy)
	if rep.Key != "" {
		if k, err := evlog.ParseKey(rep.Key); err == nil {
			say("  %-10s %s (origin %s, key hash %08x)", "log key", k.Text, k.Name, k.Hash)
		}
	}
	var names []string
	if o.Trust != nil {
		for _, a := range o.Trust.Accounts {
			names = append(names, a.String())
		}
		if len(names) == 0 {
			names = []string{"none: every anchor fails the account check (pin them with --account)"}
		}
	}
	for _, s := range o.Accounts {
		if a, err := trust.ParseAccount(s); err == nil {
			names = append(names, a.String())
		}
	}
	if o.InsecureTrustReceipt {
		names = []string{"the receipt's own"}
	}
	say("  %-10s %s", "accounts", strings.Join(names, ", "))
	if o.Trust != nil && len(o.Trust.Witnesses.List) > 0 {
		var ws []string
		for _, w := range o.Trust.Witnesses.List {
			ws = append(ws, w.Name)
		}
		var steps []string
		for _, q := range o.Trust.Witnesses.Quorum {
			steps = append(steps, fmt.Sprintf("%d from size %d", q.Witnesses, q.From))
		}
		if len(steps) == 0 {
			steps = []string{"none asked"}
		}
		say("  %-10s %s; quorum %s", "witnesses", strings.Join(ws, ", "), strings.Join(steps, ", then "))
	}
	clocks := []string{}
	for _, n := range verify.DefaultClocks {
		clocks = append(clocks, verify.DescribeNetwork(n)+" (default)")
	}
	for _, c := range o.Clocks {
		if strings.Contains(c, ":") {
			c = verify.DescribeNetwork(c)
		} else {
			c += " (whatever network its endpoints are on)"
		}
		clocks = append(clocks, c+" (--clock)")
	}
	say("  %-10s trusted for time: %s", "clocks", strings.Join(clocks, ", "))
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
