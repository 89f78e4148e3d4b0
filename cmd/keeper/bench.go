package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/keeperhq/keeper/internal/bench"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
)

// benchLong is `keeper bench --help`.
const benchLong = `keeper bench starts a fresh embedded stack (Temporal server, local chains, API,
dispatcher and worker) in a temporary directory (--dir to keep it elsewhere; --api to
measure only intake on a keeper already running) and measures, in one run:

  low-load      one evidence every 500 ms for 30 s: intake → submitted and → confirmed
  cadence       a steady arrival at each of --cadence-rates for --cadence-for: anchor
                batches per chain against the cadence's ceiling (full batches aside)
  intake        open-loop POST /v1/evidence at --rate for --duration (latency from each
                request's scheduled send time)
  batched       as much evidence as intake accepts for --duration, default batching:
                confirmed/s, latencies, Temporal actions, chain transactions, CPU, RSS
  bulk          the same through POST /v1/evidence/batch, --bulk-size evidence a
                request from --bulk-clients clients
  tiles         (only when --phases names it) --tile-clients clients read the log's
                tiles from /log/ back to back for --tile-for (full level-0 tiles at
                random, a tenth partial ones); the log is first grown to 16,384 entries
  per-evidence  the same on a second stack with KEEPER_BATCH_MAX_ITEMS=1

An anchoring phase's confirmed/s leaves out 10 s of warm-up after its first
confirmation and counts over at least 20 s more: a --duration under 30s, or a
--cadence-for under a minute, is warned about and its figures marked not steady.

--deployments measures several deployments one after another, each on fresh stacks and
databases, and reports them side by side (phases intake,batched unless --phases says):

  sqlite    the one process above, keeper's store and Temporal on SQLite
  witnessed the same with the log's witnesses: --witnesses local ones (2 unless given)
            at a quorum of all, in the process, as keeper dev --witnesses N runs them;
            the log's figures add a checkpoint's signature → the witnesses' quorum
  postgres  the same process, keeper's store and Temporal on fresh PostgreSQL databases
            (on the server of --postgres-url, dropped afterwards); the PostgreSQL
            server's own CPU is reported beside keeper's
  multi     keeper devserver (Temporal on PostgreSQL), keeper devchains, two keeper api
            and two keeper worker processes on one PostgreSQL store, spawned from this
            executable; the load is spread over both APIs; each process's CPU and RSS

It prints one table, and writes the same as JSON (--out) and a chart (--plot).
` + "`keeper bench backfill`" + ` and ` + "`keeper bench epoch`" + ` measure the other two workloads.
Every other keeper setting (--chains, --batch-max-wait-ms, --dev-evm-block-ms, …)
applies to the stacks. Numbers depend on the machine and on what else runs on it:
the report carries the load average.`

func benchCmd() *cobra.Command {
	cfg, loadErr := config.Load(nil)
	var (
		o           bench.Options
		phases      string
		deployments string
		out         string
		plotPath    string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure intake latency, anchoring throughput (batched and per evidence), cost and low-load latency on a fresh embedded stack",
		Long:  benchLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop, err := benchStart(cmd, &cfg, loadErr)
			if err != nil {
				return err
			}
			defer stop()
			stopPprof, err := cli.StartPprof(cfg.PprofAddr, cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text")))
			if err != nil {
				return err
			}
			defer stopPprof()
			o.Config = cfg
			o.Deployments = splitList(deployments)
			if len(o.Deployments) == 0 || cmd.Flags().Changed("phases") {
				o.Phases = splitList(phases) // else the deployments' own default
			}
			o.Logger = cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text"))
			o.Progress = cmd.ErrOrStderr()
			r, err := bench.Run(ctx, o)
			if err != nil {
				return err
			}
			return writeBenchReport(cmd, r, out, plotPath)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 60*time.Second, "length of the intake, batched, bulk and per-evidence phases, each (under "+(bench.SteadyWarmUp+bench.SteadyWindow).String()+" the anchoring phases have no steady window: the bench warns)")
	f.Float64Var(&o.Rate, "rate", 1000, "intake phase: requests per second, open loop")
	f.IntVar(&o.Concurrency, "clients", 32, "anchoring phases: concurrent clients posting back to back")
	f.IntVar(&o.BulkClients, "bulk-clients", 4, "bulk phase: concurrent clients posting POST /v1/evidence/batch back to back")
	f.IntVar(&o.BulkSize, "bulk-size", 1000, "bulk phase: evidence per request (at most 1,000)")
	f.Float64Var(&o.AnchorRate, "anchor-rate", 0, "anchoring phases: cap on requests per second (0 = as fast as intake answers)")
	f.StringVar(&phases, "phases", strings.Join(bench.DefaultPhases, ","), "phases to run (comma-separated): "+strings.Join(bench.AllPhases, ", "))
	f.DurationVar(&o.LowLoadEvery, "low-load-every", 500*time.Millisecond, "low-load phase: one evidence this often")
	f.DurationVar(&o.LowLoadFor, "low-load-for", 30*time.Second, "low-load phase: for this long")
	f.Float64SliceVar(&o.CadenceRates, "cadence-rates", []float64{1, 10, 100, 1000}, "cadence phase: steady arrival rates, evidence/s, one after another")
	f.DurationVar(&o.CadenceFor, "cadence-for", bench.CadenceLeast, "cadence phase: each rate for this long (shorter than a minute, or than two anchor intervals, is not steady: the bench warns)")
	f.IntVar(&o.TileClients, "tile-clients", 16, "tiles phase: concurrent clients reading the log's tiles back to back")
	f.DurationVar(&o.TileFor, "tile-for", 20*time.Second, "tiles phase: for this long")
	f.DurationVar(&o.Drain, "drain", 2*time.Minute, "longest wait for a phase's evidence to be confirmed")
	f.StringVar(&o.Dir, "dir", "", "keep the stacks' data here (default: a temporary directory, removed afterwards)")
	f.StringVar(&o.API, "api", "", "host:port of a running keeper API to measure instead (intake phase only: --phases intake)")
	f.StringVar(&deployments, "deployments", "", "measure these deployments side by side (comma-separated): "+strings.Join(bench.AllDeployments, ", ")+"; each on fresh stacks and databases (default phases then: "+strings.Join(bench.DeploymentPhases, ",")+"); empty: one process, its store and Temporal where --store-url and --db say")
	f.StringVar(&o.PostgresURL, "postgres-url", bench.DefaultPostgresURL, "PostgreSQL server the postgres and multi deployments create their fresh databases on (the user needs CREATEDB); they are dropped when the run ends")
	f.StringVar(&out, "out", "", "write the report as JSON to this file")
	f.StringVar(&plotPath, "plot", "", "write a PNG chart of confirmed/s and p99 latency over time to this file")
	cfg.Bind(f, config.Everything)
	cmd.AddCommand(benchBackfillCmd(), benchEpochCmd())
	return cmd
}

// writeBenchReport prints a run's table and writes its JSON (out) and chart
// (plotPath) where asked.
func writeBenchReport(cmd *cobra.Command, r *bench.Report, out, plotPath string) error {
	r.Evaluate()
	r.WriteTable(cmd.OutOrStdout())
	if out != "" {
		if err := r.WriteJSON(out); err != nil {
			return fmt.Errorf("write %s: %w", out, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "bench: report written to %s\n", out)
	}
	if plotPath != "" {
		if err := r.WritePlot(plotPath); err != nil {
			return fmt.Errorf("write %s: %w", plotPath, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "bench: chart written to %s\n", plotPath)
	}
	return nil
}

// workloadCmd is a `keeper bench` subcommand that runs one workload on a
// fresh stack and reports it as a table and, with --out, JSON.
func workloadCmd(use, short, long string, flags func(*pflag.FlagSet),
	run func(ctx context.Context, cfg config.Config, log *slog.Logger, progress func(string, ...any)) (*bench.WorkloadReport, error)) *cobra.Command {
	cfg, loadErr := config.Load(nil)
	var out string
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop, err := benchStart(cmd, &cfg, loadErr)
			if err != nil {
				return err
			}
			defer stop()
			progress := func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "bench: "+format+"\n", args...) }
			r, err := run(ctx, cfg, cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text")), progress)
			if err != nil {
				return err
			}
			r.WriteTable(cmd.OutOrStdout())
			if out != "" {
				if err := r.WriteJSON(out); err != nil {
					return fmt.Errorf("write %s: %w", out, err)
				}
				progress("report written to %s", out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "write the report as JSON to this file")
	flags(f)
	cfg.Bind(f, config.Everything)
	return cmd
}

func benchBackfillCmd() *cobra.Command {
	var o bench.BackfillOptions
	var networks string
	return workloadCmd("backfill", "Backfill a wallet with a built history on each local chain and measure blocks/s and transfers/s",
		`keeper bench backfill builds a wallet history on a fresh local EVM chain (native and
ERC-20 transfers in both directions, fees, a reverted transaction and unrelated traffic,
about 5,000 blocks by default) and on the local Solana devnet, then adds the wallet
through POST /v1/wallets and follows it until it is scanned, reclassified and
reconciled. It reports blocks (or signatures) and transfers per second, the Temporal
actions the WalletSync and Backfill workflows cost, CPU and peak RSS.`,
		func(f *pflag.FlagSet) {
			f.StringVar(&networks, "networks", "etherlink,solana", "networks to backfill on (comma-separated): etherlink, solana")
			f.IntVar(&o.EVMRounds, "evm-rounds", 120, "rounds of wallet traffic on the EVM chain (about 4.6 wallet transfers each)")
			f.IntVar(&o.EVMBlocks, "evm-blocks-per-round", 42, "blocks sealed per round")
			f.IntVar(&o.SolanaTxs, "solana-rounds", 200, "rounds of wallet traffic on the Solana devnet")
			f.DurationVar(&o.Limit, "limit", 10*time.Minute, "longest wait for one wallet")
			f.StringVar(&o.Dir, "dir", "", "keep the stack's data here (default: a temporary directory, removed afterwards)")
		},
		func(ctx context.Context, cfg config.Config, log *slog.Logger, progress func(string, ...any)) (*bench.WorkloadReport, error) {
			o.Config, o.Logger, o.Progress, o.Networks = cfg, log, progress, splitList(networks)
			return bench.RunBackfill(ctx, o)
		})
}

func benchEpochCmd() *cobra.Command {
	var o bench.EpochOptions
	return workloadCmd("epoch", "Compute a reward epoch of a million accounts through the API and measure each stage",
		`keeper bench epoch serves the usage of --accounts accounts (1,000,000 by default) from a
local accounting source, asks POST /rewarder/epochs/{id}/compute for an epoch over it with
the largest pool (2^127), and follows the epoch until it completed: inputs sealed, the
split computed and checked, artifacts written, every intent acknowledged by the built-in
ledger and the commitment anchored on the local chains. It reports each stage's time,
intents per second, the Temporal actions, CPU and peak RSS.`,
		func(f *pflag.FlagSet) {
			f.IntVar(&o.Accounts, "accounts", 1_000_000, "accounts in the epoch")
			f.StringVar(&o.Pool, "pool", "170141183460469231731687303715884105728", "pool to split, in minor units")
			f.DurationVar(&o.Limit, "limit", 10*time.Minute, "longest wait for the epoch")
			f.StringVar(&o.Dir, "dir", "", "keep the stack's data here (default: a temporary directory, removed afterwards)")
		},
		func(ctx context.Context, cfg config.Config, log *slog.Logger, progress func(string, ...any)) (*bench.WorkloadReport, error) {
			o.Config, o.Logger, o.Progress = cfg, log, progress
			return bench.RunEpoch(ctx, o)
		})
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// benchStart checks the configuration, says which former names of
// settings it used, quiets the stack's logs unless --log-level was given,
// and returns a context that SIGINT or SIGTERM ends.
func benchStart(cmd *cobra.Command, cfg *config.Config, loadErr error) (context.Context, context.CancelFunc, error) {
	if loadErr != nil {
		return nil, nil, loadErr
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	for _, d := range cfg.Deprecations() {
		fmt.Fprintln(cmd.ErrOrStderr(), "bench: "+d)
	}
	if !cmd.Flags().Changed("log-level") {
		cfg.LogLevel = "error"
	}
	cfg.DevCadence(cmd.Flags().Changed)
	cfg.DevURLs(cmd.Flags().Changed("webhook-allow-private"))
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	return ctx, stop, nil
}
