package cli

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
)

func logCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "The evidence log: mirror it as static files, audit it against the chains",
	}
	cmd.AddCommand(logExportCmd(), logAuditCmd(), logKeygenCmd(), logTrustCmd())
	return cmd
}

func logKeygenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keygen [FILE]",
		Short: "Make the evidence log's signing key for KEEPER_LOG_ORIGIN in FILE (default: KEEPER_LOG_KEY_FILE, else the data directory's) and print its verifier key; never overwrites a key",
		Args:  cobra.MaximumNArgs(1),
	}
	return Configured(cmd, config.Base|config.LogSigner, false, func(_ context.Context, cmd *cobra.Command, cfg *config.Config) error {
		if f := cmd.Flags().Arg(0); f != "" {
			cfg.Log.KeyFile = f
		}
		path := cfg.LogKeyFileOrDefault()
		signer, made, err := node.LogSigner(*cfg)
		if err != nil {
			return err
		}
		if !made {
			return fmt.Errorf("%s already holds a log key (verifier key %s): a new key is a new log, so keeper never replaces one", path, signer.Key().Text)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote the signing key of %s to %s (mode 0600: give it to every worker as KEEPER_LOG_KEY_FILE, and back it up)\nverifier key (publish it; auditors pin it):\n%s\n",
			cfg.Log.Origin, path, signer.Key().Text)
		return nil
	})
}

func logExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write the log from keeper's store to DIR as static files (checkpoint, key, trust, tile/…, checkpoints/, anchors.json) that any web server or bucket can serve",
		Args:  cobra.ExactArgs(1),
	}
	follow := cmd.Flags().Bool("follow", false, "keep mirroring: export again every --interval until interrupted")
	interval := cmd.Flags().Duration("interval", 0, "with --follow, the time between exports (default: KEEPER_LOG_CHECKPOINT_INTERVAL)")
	return Configured(cmd, config.Base|config.Store|config.LogMirror, false, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		dir := cmd.Flags().Arg(0)
		st, err := node.OpenStore(ctx, *cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		out := cmd.OutOrStdout()
		if !*follow {
			res, err := logsvc.Export(ctx, st, dir)
			if errors.Is(err, store.ErrNotFound) {
				return errors.New("the log has no checkpoint yet: nothing to export")
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "exported the log of %d entries to %s (%d files written)\n", res.Size, dir, res.Files)
			return nil
		}
		if *interval < 0 {
			return fmt.Errorf("--interval must not be negative, got %s", *interval)
		}
		return followExport(ctx, st, dir, cmp.Or(*interval, cfg.Log.CheckpointInterval), out, cmd.ErrOrStderr())
	})
}

// followExport exports every interval until ctx ends; a failed export is
// reported and tried again at the next one.
func followExport(ctx context.Context, st logsvc.Source, dir string, every time.Duration, out, errOut io.Writer) error {
	t := time.NewTicker(every)
	defer t.Stop()
	var last uint64
	var lastErr string
	for {
		res, err := logsvc.Export(ctx, st, dir)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil // interrupted mid-export: the last complete one stands
		case errors.Is(err, store.ErrNotFound):
			if lastErr == "" {
				fmt.Fprintln(errOut, "the log has no checkpoint yet: waiting for the first")
				lastErr = "waiting"
			}
		case err != nil:
			if err.Error() != lastErr {
				fmt.Fprintf(errOut, "export failed (trying again every %s): %v\n", every, err)
				lastErr = err.Error()
			}
		default:
			lastErr = ""
			if res.Size != last {
				fmt.Fprintf(out, "%s exported the log of %d entries to %s (%d files written)\n", time.Now().UTC().Format(time.RFC3339), res.Size, dir, res.Files)
				last = res.Size
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func logTrustCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Print the deployment's trust root from keeper's store (docs/log.md, Trust): the log's key and the anchoring accounts per network; auditors and verifiers pin it",
		Args:  cobra.NoArgs,
	}
	signed := cmd.Flags().Bool("signed", false, "print it as the note the log's key signed (what /log/trust serves), not as plain JSON")
	cmd = Configured(cmd, config.Base|config.Store, false, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		st, err := node.OpenStore(ctx, *cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		t, err := st.TrustRoot(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return errors.New("the log has no trust root yet: a worker lists its anchoring accounts when it starts")
		}
		if err != nil {
			return err
		}
		out := t.Root.Marshal()
		if *signed {
			out = t.Note
		}
		_, err = cmd.OutOrStdout().Write(out)
		return err
	})
	cmd.AddCommand(logTrustRetireCmd())
	return cmd
}

// logTrustRetireCmd closes an anchoring account in the trust root: the
// operator's step when a key is rotated out or was lost.
func logTrustRetireCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "retire ACCOUNT|WITNESS",
		Short: "Retire an anchoring account (its CAIP-10 id, as `keeper log trust` lists it) or a witness (its name) from the trust root at the log's next checkpoint: " +
			"the account's anchors of later checkpoints no longer verify, and a worker holding its key is refused; the witness's cosignatures of later checkpoints no longer count (docs/trust.md)",
		Args: cobra.ExactArgs(1),
	}
	return Configured(cmd, config.Base|config.Store|config.LogSigner, false, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		id := strings.TrimSpace(cmd.Flags().Arg(0))
		_, _, caipErr := trust.SplitCAIP10(id)
		witness := caipErr != nil // a witness's name (docs/log.md, Witnesses)
		if _, err := os.Stat(cfg.LogKeyFileOrDefault()); err != nil {
			return fmt.Errorf("the log's signing key: %w (retire runs where the workers' KEEPER_LOG_KEY_FILE is)", err)
		}
		signer, _, err := node.LogSigner(*cfg)
		if err != nil {
			return err
		}
		st, err := node.OpenStore(ctx, *cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		var size uint64
		switch latest, err := st.LatestCheckpoint(ctx); {
		case err == nil:
			size = latest.Size + 1
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		t, err := st.UpdateTrustRoot(ctx, func(prev trust.Root, ok bool) (trust.Root, []byte, error) {
			if !ok {
				return trust.Root{}, nil, errors.New("the log has no trust root yet: nothing to retire")
			}
			next := prev
			next.Accounts = append([]trust.Account(nil), prev.Accounts...)
			if witness {
				if err := next.RetireWitness(id, size); err != nil {
					return trust.Root{}, nil, fmt.Errorf("%q is not a CAIP-10 account id, so a witness's name, and %w", id, err)
				}
			} else if err := next.Retire(id, size, time.Now()); err != nil {
				return trust.Root{}, nil, err
			}
			note, err := trust.Sign(next, signer)
			return next, note, err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "retired %s from checkpoints of %d entries on (trust root version %d)\n", id, size, t.Version)
		return nil
	})
}

func logAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Monitor the log: check every checkpoint the pinned anchoring accounts committed to on each chain against the log's signed checkpoints and tiles (exit 0 only when nothing is found)",
		Args:  cobra.NoArgs,
	}
	logFlag := cmd.Flags().String("log", strings.TrimSuffix(apiURL(), "/")+"/log", "the log: its `url` (keeper's /log, or a mirror) or a directory 'keeper log export' wrote (default from KEEPER_API_URL)")
	trustFlag := cmd.Flags().String("trust", "", "the deployment's trust root you pinned, a `file`: the JSON 'keeper log trust' prints, or the signed note /log/trust serves; every account it lists is read on every network it lists")
	rpcFlags := cmd.Flags().StringArray("rpc", nil, "CHAIN=URL: a JSON-RPC endpoint of a chain to read (etherlink, solana), repeatable: one or more per network, each node saying which network it is on; several on one network are all asked, and where they disagree is a finding; chains without one default to KEEPER_EVM_RPC_URL, KEEPER_SOLANA_RPC_URL or the local dev chains")
	keyFlag := cmd.Flags().String("log-key", "", "the log's verifier key (vkey text, or a file holding it): the short form, without --trust (with it, it must be the root's key)")
	accountFlags := cmd.Flags().StringArray("account", nil, "CHAIN=ADDRESS: with --log-key, an anchoring account to audit (EVM 0x address, Solana fee payer), repeatable; default: the accounts keeper lists")
	scan := cmd.Flags().Uint64("scan-blocks", 0, fmt.Sprintf("EVM blocks read back from the head to find the anchoring account's transactions keeper does not list (default: %d and, with --trust, back to when the root lists the account)", audit.DefaultScanBlocks))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		o := audit.Options{ScanBlocks: *scan, DefaultRPC: func(chain string) string {
			return defaultEndpoint(chain)
		}}
		if *trustFlag == "" && *keyFlag == "" {
			return errors.New("nothing pinned: give --trust FILE (the deployment's trust root: `keeper log trust`, or /log/trust) or at least --log-key VKEY; an audit against the log's own word proves nothing")
		}
		if *trustFlag != "" && len(*accountFlags) > 0 {
			return errors.New("--account: the trust root lists the anchoring accounts; give --trust or --account, not both")
		}
		var err error
		if o.Chains, err = auditChains(*rpcFlags, *accountFlags); err != nil {
			return err
		}
		if *keyFlag != "" {
			k, err := readLogKey(*keyFlag)
			if err != nil {
				return err
			}
			o.Key = &k
		}
		if *trustFlag != "" {
			root, err := readTrust(*trustFlag, o.Key)
			if err != nil {
				return err
			}
			o.Trust = &root
		}
		if o.Log, err = evlog.NewClient(*logFlag, nil); err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		r, err := audit.Run(cmd.Context(), o)
		if r != nil {
			printAudit(cmd.OutOrStdout(), cmd.ErrOrStderr(), o.Log.Location(), o, r)
		}
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		if n := len(r.Findings); n > 0 {
			return fmt.Errorf("audit: %d finding(s)", n)
		}
		return nil
	}
	return cmd
}

// readTrust reads the trust root the auditor pinned: plain JSON, or the
// note the log's key signed (checked against the pinned key when there is
// one, else against the key the root names).
func readTrust(path string, key *evlog.Key) (trust.Root, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return trust.Root{}, fmt.Errorf("--trust: %w", err)
	}
	root, err := trust.Open(b, nil)
	if err != nil {
		return trust.Root{}, fmt.Errorf("--trust %s: %w", path, err)
	}
	if key != nil && root.Log.Key != key.Text {
		return trust.Root{}, fmt.Errorf("--trust %s: the root names log key %s, and --log-key is %s", path, root.Log.Key, key.Text)
	}
	return root, nil
}

// auditChains reads --rpc CHAIN=URL and --account CHAIN=ADDRESS: one
// chain each, with every endpoint given for it; a chain with an account
// and no --rpc takes its default endpoint.
func auditChains(rpcs, accounts []string) ([]audit.Chain, error) {
	var out []audit.Chain
	index := map[string]int{} // a chain's entry
	for _, f := range rpcs {
		name, url, ok := strings.Cut(f, "=")
		if !ok || name == "" || url == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--rpc %s: write CHAIN=URL (etherlink=https://…, solana=https://…)", f)
		}
		if i, ok := index[name]; ok {
			out[i].RPCs = append(out[i].RPCs, url)
			continue
		}
		index[name] = len(out)
		out = append(out, audit.Chain{Name: name, RPC: url})
	}
	for _, f := range accounts {
		name, acct, ok := strings.Cut(f, "=")
		if !ok || name == "" || acct == "" {
			return nil, fmt.Errorf("--account %s: write CHAIN=ADDRESS", f)
		}
		i, ok := index[name]
		if !ok {
			_, known := defaultRPC[name]
			if !known {
				return nil, fmt.Errorf("--account %s=…: no endpoint for %s; add --rpc %s=URL", name, name, name)
			}
			i, index[name] = len(out), len(out)
			out = append(out, audit.Chain{Name: name, RPC: defaultEndpoint(name)})
		}
		out[i].Accounts = append(out[i].Accounts, acct)
	}
	return out, nil
}

// readLogKey reads a verifier key given as its text or as a file holding it.
func readLogKey(v string) (evlog.Key, error) {
	k, err := evlog.ParseKey(v)
	if err == nil {
		return k, nil
	}
	b, ferr := os.ReadFile(v)
	if ferr != nil {
		return evlog.Key{}, fmt.Errorf("--log-key: neither a verifier key (<origin>+<hash>+<key>) nor a readable file")
	}
	k, err = evlog.ParseKey(string(b))
	if err != nil {
		return evlog.Key{}, fmt.Errorf("--log-key %s: %w", v, err)
	}
	return k, nil
}

// printAudit prints the report: what was pinned, read and checked, then
// one line per warning (to errOut) and per finding.
func printAudit(out, errOut io.Writer, location string, o audit.Options, r *audit.Report) {
	if r.Key.Text == "" {
		return // the audit ended before it read the log
	}
	if o.Trust == nil {
		accounts := "the accounts keeper lists (its own word: pin its trust root with --trust)"
		if len(o.Chains) > 0 && slices.ContainsFunc(o.Chains, func(c audit.Chain) bool { return len(c.Accounts) > 0 }) {
			accounts = "the accounts given with --account"
		}
		fmt.Fprintln(errOut, "warning: no trust root pinned: reading "+accounts)
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(errOut, "warning: "+w)
	}
	fmt.Fprintf(out, "log %s at %s\n", r.Key.Name, location)
	fmt.Fprintf(out, "  pinned key: %s\n", r.Key.Text)
	if o.Trust != nil {
		fmt.Fprintf(out, "  pinned trust root: %d account(s) on %d network(s)\n", len(o.Trust.Accounts), len(o.Trust.Networks()))
		for _, a := range o.Trust.Accounts {
			fmt.Fprintf(out, "    %s\n", a)
		}
	}
	if r.Latest.Size > 0 {
		fmt.Fprintf(out, "  latest checkpoint: %d entries, root %s\n", r.Latest.Size, base64.StdEncoding.EncodeToString(r.Latest.Root[:]))
	}
	for _, chain := range slices.Sorted(maps.Keys(r.Transactions)) {
		fmt.Fprintf(out, "  %s: %d transaction(s) of the accounts read and judged\n", chain, r.Transactions[chain])
	}
	for _, chain := range slices.Sorted(maps.Keys(r.Anchors)) {
		fmt.Fprintf(out, "  %s: %d checkpoint anchor(s) read from the chain\n", chain, r.Anchors[chain])
	}
	fmt.Fprintf(out, "  %d anchored checkpoint(s) checked against the log\n", r.Checkpoints)
	if r.Leaves > 0 {
		fmt.Fprintf(out, "  the latest root rebuilt from its %d leaves in the hash tiles and in the entry bundles\n", r.Leaves)
	}
	for _, f := range r.Findings {
		fmt.Fprintln(out, "FINDING "+f.String())
	}
	if r.OK() {
		fmt.Fprintln(out, "no findings")
	}
}
