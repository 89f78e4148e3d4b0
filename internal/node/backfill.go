package node

import (
	"context"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/workflows"
)

// scanTimeout bounds one scan attempt; a longer history simply takes more
// attempts, each resuming from the last checkpoint.
const scanTimeout = 24 * time.Hour

// BackfillNetworks are the configured chains wallets can be backfilled on,
// in configuration order.
func BackfillNetworks(cfg config.Config) []string {
	var out []string
	for _, c := range cfg.Chains {
		if c == scan.Etherlink || c == scan.Solana {
			out = append(out, c)
		}
	}
	return out
}

// BackfillPolicy is the retry schedule and timeouts the configuration asks
// for (retry.Backfill's numbers by default; docs/retries.md, backfill).
func BackfillPolicy(cfg config.Config) workflows.BackfillPolicy {
	b := cfg.Backfill
	return workflows.BackfillPolicy{
		Schedule:    workflows.RetrySchedule{MaxRetries: b.MaxRetries, Base: b.RetryBase, Cap: b.RetryCap, JitterPct: b.RetryJitterPct},
		ScanTimeout: scanTimeout,
		Heartbeat:   b.Heartbeat,
	}
}

// NewScanners builds a history scanner per backfill network, on the same
// endpoints the anchoring adapters use.
func NewScanners(ctx context.Context, cfg config.Config) (map[string]scan.Scanner, error) {
	if err := RegisterRPCPools(cfg); err != nil {
		return nil, err
	}
	out := map[string]scan.Scanner{}
	for _, name := range BackfillNetworks(cfg) {
		switch name {
		case scan.Etherlink:
			s, err := evmscan.New(ctx, evmscan.Config{
				Network: name, RPCURL: EVMRPC(cfg), ChunkBlocks: cfg.Backfill.EVMChunkBlocks, MaxLogs: cfg.Backfill.EVMMaxLogs, Confirmations: uint64(cfg.EVM.Confirmations), RPCRate: cfg.EVM.RPCRate,
				ArchiveURL: cfg.EVM.ArchiveRPCURL,
			})
			if err != nil {
				return nil, err
			}
			out[name] = s
		case scan.Solana:
			out[name] = solscan.New(solscan.Config{Network: name, RPCURL: SolanaRPC(cfg), ChunkSize: cfg.Backfill.SolanaChunk, RPCRate: cfg.Solana.RPCRate})
		}
	}
	return out, nil
}

// startBackfillWorker runs the wallet-backfill worker when a backfill
// network is configured, and, until runCtx is done, its reconciliation: at
// start and every KEEPER_BACKFILL_RECONCILE_MS it hands Temporal again the
// items no workflow works on (docs/backfill.md, "Outages").
func (n *Node) startBackfillWorker(ctx, runCtx context.Context) error {
	scanners, err := NewScanners(ctx, n.Cfg)
	if err != nil || len(scanners) == 0 {
		return err
	}
	urls := append([]string{EVMRPC(n.Cfg), SolanaRPC(n.Cfg), n.Cfg.EVM.ArchiveRPCURL}, append(n.Cfg.EVM.RPC.URLs, n.Cfg.Solana.RPC.URLs...)...)
	acts := &backfill.Activities{Store: n.Store, Scanners: scanners, RPCURLs: urls, Logger: n.Logger}
	n.backfillWorker = backfill.NewWorker(n.Client, acts, n.workerOptions(n.Cfg.Backfill.Workers))
	if err := n.backfillWorker.Start(); err != nil {
		return fmt.Errorf("start backfill worker: %w", err)
	}
	r := &backfill.Dispatcher{Store: n.Store, Temporal: n.Client, Policy: BackfillPolicy(n.Cfg), Logger: n.Logger}
	n.wg.Go(func() { r.RunReconcile(runCtx, n.Cfg.Backfill.Reconcile) })
	return nil
}

// backfillHTTP serves the wallet routes on the API, draining with it, and
// registers the backfill gauges the API reports. The dispatcher that starts
// the added wallets' work is nil when no backfill network is configured:
// the routes then answer that wallet backfill is not enabled here.
func (n *Node) backfillHTTP() (*backfill.HTTP, *backfill.Dispatcher) {
	cfg := n.Cfg
	var nets []backfill.Network
	for _, name := range BackfillNetworks(cfg) {
		switch name {
		case scan.Etherlink:
			nets = append(nets, backfill.Network{Name: name, Unit: "blocks", Start: uint64(cfg.Backfill.EtherlinkStart), Parse: evmscan.ParseAddress})
		case scan.Solana:
			nets = append(nets, backfill.Network{Name: name, Unit: "signatures", Start: uint64(cfg.Backfill.SolanaStart), Parse: solscan.ParseAddress})
		}
	}
	n.registry.MustRegister(&backfill.Collector{Store: n.Store, Networks: nets})
	h := &backfill.HTTP{Store: n.Store, Networks: nets, Logger: n.Logger, MaxBodyBytes: cfg.MaxBodyBytes, Draining: n.api.Draining}
	if len(nets) == 0 {
		return h, nil
	}
	d := &backfill.Dispatcher{Store: n.Store, Temporal: n.Client, Policy: BackfillPolicy(cfg), Sweep: cfg.PollInterval, Logger: n.Logger}
	h.Wake, h.Recheck = d.Wake, d.Recheck
	return h, d
}
