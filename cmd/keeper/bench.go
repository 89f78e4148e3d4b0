package main

import (
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/bench"
	"github.com/keeperhq/keeper/cli"
	"github.com/keeperhq/keeper/config"
)

func benchCmd() *cobra.Command {
	cfg, loadErr := config.Load(nil)
	var (
		o        bench.Options
		phases   string
		out      string
		plotPath string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure intake latency, anchoring throughput (batched and per evidence), cost and low-load latency on a fresh embedded stack",
		Long: `keeper bench starts a fresh embedded stack (Temporal server, local chains, API,
dispatcher and worker) in a temporary directory (--dir to keep it elsewhere; --api to
measure only intake on a keeper already running) and measures, in one run:

  low-load      one evidence every 500 ms for 30 s: intake → submitted and → confirmed
  intake        open-loop POST /v1/evidence at --rate for --duration (latency from each
                request's scheduled send time)
  batched       as much evidence as intake accepts for --duration, default batching:
                confirmed/s, latencies, Temporal actions, chain transactions, CPU, RSS
  per-evidence  the same on a second stack with KEEPER_BATCH_MAX_ITEMS=1

It prints one table, and writes the same as JSON (--out) and a chart (--plot).
Every other keeper setting (--chains, --batch-max-wait-ms, --dev-evm-block-ms, …)
applies to the stacks. Numbers depend on the machine and on what else runs on it:
the report carries the load average.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if loadErr != nil {
				return loadErr
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("log-level") {
				cfg.LogLevel = "error"
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			stopPprof, err := cli.StartPprof(cfg.PprofAddr, cli.Logger(cfg.LogLevel))
			if err != nil {
				return err
			}
			defer stopPprof()
			o.Config = cfg
			o.Phases = nil
			for _, p := range strings.Split(phases, ",") {
				if p = strings.TrimSpace(p); p != "" {
					o.Phases = append(o.Phases, p)
				}
			}
			o.Logger = cli.Logger(cfg.LogLevel)
			o.Progress = cmd.ErrOrStderr()
			r, err := bench.Run(ctx, o)
			if err != nil {
				return err
			}
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
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 60*time.Second, "length of the intake, batched and per-evidence phases, each")
	f.Float64Var(&o.Rate, "rate", 1000, "intake phase: requests per second, open loop")
	f.IntVar(&o.Concurrency, "clients", 32, "anchoring phases: concurrent clients posting back to back")
	f.Float64Var(&o.AnchorRate, "anchor-rate", 0, "anchoring phases: cap on requests per second (0 = as fast as intake answers)")
	f.StringVar(&phases, "phases", strings.Join(bench.AllPhases, ","), "phases to run (comma-separated): "+strings.Join(bench.AllPhases, ", "))
	f.DurationVar(&o.LowLoadEvery, "low-load-every", 500*time.Millisecond, "low-load phase: one evidence this often")
	f.DurationVar(&o.LowLoadFor, "low-load-for", 30*time.Second, "low-load phase: for this long")
	f.DurationVar(&o.Drain, "drain", 2*time.Minute, "longest wait for a phase's evidence to be confirmed")
	f.StringVar(&o.Dir, "dir", "", "keep the stacks' data here (default: a temporary directory, removed afterwards)")
	f.StringVar(&o.API, "api", "", "host:port of a running keeper API to measure instead (intake phase only: --phases intake)")
	f.StringVar(&out, "out", "", "write the report as JSON to this file")
	f.StringVar(&plotPath, "plot", "", "write a PNG chart of confirmed/s and p99 latency over time to this file")
	cfg.BindFlags(f)
	return cmd
}
