package node

import (
	"context"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dispatch"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/worker"
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
		if c == backfill.Etherlink || c == backfill.Solana {
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
func NewScanners(ctx context.Context, cfg config.Config) (map[string]backfill.Scanner, error) {
	if err := RegisterRPCPools(cfg); err != nil {
		return nil, err
	}
	out := map[string]backfill.Scanner{}
	for _, name := range BackfillNetworks(cfg) {
		switch name {
		case backfill.Etherlink:
			s, err := evmscan.New(ctx, evmscan.Config{
				Network: name, RPCURL: EVMRPC(cfg), ChunkBlocks: cfg.Backfill.EVMChunkBlocks, MaxLogs: cfg.Backfill.EVMMaxLogs, Confirmations: uint64(cfg.EVM.Confirmations), RPCRate: cfg.EVM.RPCRate,
			})
			if err != nil {
				return nil, err
			}
			out[name] = s
		case backfill.Solana:
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
	acts := &activities.Backfill{Store: n.Store, Scanners: scanners, RPCURLs: append([]string{EVMRPC(n.Cfg), SolanaRPC(n.Cfg)}, append(n.Cfg.EVM.RPC.URLs, n.Cfg.Solana.RPC.URLs...)...), Logger: n.Logger}
	n.backfillWorker = worker.NewBackfill(n.Client, acts, n.workerOptions(n.Cfg.Backfill.Workers))
	if err := n.backfillWorker.Start(); err != nil {
		return fmt.Errorf("start backfill worker: %w", err)
	}
	r := &dispatch.Backfills{Store: n.Store, Temporal: n.Client, Runs: n.Client, Policy: BackfillPolicy(n.Cfg), Logger: n.Logger}
	n.wg.Go(func() { r.RunReconcile(runCtx, n.Cfg.Backfill.Reconcile) })
	return nil
}

// wallets is the API's wallet-backfill side and the dispatcher that starts
// its work, both nil when no backfill network is configured.
func (n *Node) wallets() (*starter.Wallets, *dispatch.Backfills) {
	cfg := n.Cfg
	var nets []starter.WalletNetwork
	for _, name := range BackfillNetworks(cfg) {
		switch name {
		case backfill.Etherlink:
			nets = append(nets, starter.WalletNetwork{Name: name, Unit: "blocks", Start: uint64(cfg.Backfill.EtherlinkStart), Parse: evmscan.ParseAddress})
		case backfill.Solana:
			nets = append(nets, starter.WalletNetwork{Name: name, Unit: "signatures", Start: uint64(cfg.Backfill.SolanaStart), Parse: solscan.ParseAddress})
		}
	}
	if len(nets) == 0 {
		return nil, nil
	}
	d := &dispatch.Backfills{Store: n.Store, Temporal: n.Client, Runs: n.Client, Policy: BackfillPolicy(cfg), Sweep: cfg.PollInterval, Logger: n.Logger}
	return &starter.Wallets{Networks: nets, Wake: d.Wake, Recheck: d.Recheck}, d
}
