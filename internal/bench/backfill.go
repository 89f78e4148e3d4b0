package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/workflows"
)

// BackfillOptions shape `keeper bench backfill`.
type BackfillOptions struct {
	Config      config.Config
	Networks    []string      // etherlink, solana; default both
	EVMRounds   int           // rounds of wallet traffic on the EVM chain (≈ 4.6 transfers each); default 120
	EVMBlocks   int           // blocks per round; default 42 (120 × 42 ≈ 5,000 blocks)
	SolanaTxs   int           // rounds of wallet traffic on the Solana devnet; default 200
	Limit       time.Duration // longest wait for one wallet; default 10m
	Dir         string        // where the stack lives; empty = a temporary directory, removed after
	Logger      *slog.Logger
	Progress    func(format string, args ...any)
	PollEvery   time.Duration // how often the wallet's status is read; default 50ms
	SolanaSlots time.Duration // the devnet's slot time while the history is built and scanned; default 50ms
}

// BackfillMeasured is one wallet's backfill on one network.
type BackfillMeasured struct {
	Network         string  `json:"network"`
	Wallet          string  `json:"wallet"`
	Status          string  `json:"status"`
	Unit            string  `json:"unit"` // blocks or signatures
	Scanned         uint64  `json:"scanned"`
	Transfers       int     `json:"transfers"`
	ScanS           float64 `json:"scan_s"` // POST → the network's item COMPLETED
	UnitsPerSec     float64 `json:"units_per_s"`
	TransfersPerSec float64 `json:"transfers_per_s"`
	DoneS           float64 `json:"done_s"` // POST → reclassified and reconciled
	Reconciled      *bool   `json:"reconciled"`
}

// RunBackfill builds a wallet history on each local chain, then backfills
// the wallet through the API and measures how fast the scan went.
func RunBackfill(ctx context.Context, o BackfillOptions) (*WorkloadReport, error) {
	if len(o.Networks) == 0 {
		o.Networks = []string{scan.Etherlink, scan.Solana}
	}
	if err := negative(setting{"--evm-rounds", float64(o.EVMRounds)}, setting{"--evm-blocks-per-round", float64(o.EVMBlocks)}, setting{"--solana-rounds", float64(o.SolanaTxs)},
		setting{"--limit", o.Limit.Seconds()}, setting{"PollEvery", o.PollEvery.Seconds()}, setting{"SolanaSlots", o.SolanaSlots.Seconds()}); err != nil {
		return nil, err
	}
	o.EVMRounds = cmp.Or(o.EVMRounds, 120)
	o.EVMBlocks = cmp.Or(o.EVMBlocks, 42)
	o.SolanaTxs = cmp.Or(o.SolanaTxs, 200)
	o.Limit = cmp.Or(o.Limit, 10*time.Minute)
	o.PollEvery = cmp.Or(o.PollEvery, 50*time.Millisecond)
	o.SolanaSlots = cmp.Or(o.SolanaSlots, 50*time.Millisecond)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	for _, n := range o.Networks {
		if n != scan.Etherlink && n != scan.Solana {
			return nil, fmt.Errorf("bench backfill: unknown network %q (known: etherlink, solana)", n)
		}
	}
	dir, cleanup, err := workDir(o.Dir, "backfill")
	if err != nil {
		return nil, err
	}
	defer cleanup()

	cfg := o.Config
	cfg.Chains = o.Networks
	cfg.EVM.RPCURL, cfg.Solana.RPCURL = "", "" // the stack's local chains
	cfg.EVM.RPC.URLs, cfg.Solana.RPC.URLs = nil, nil
	cfg.Dev.EVMBlockTime = time.Hour // the history builder seals the blocks itself
	cfg.Dev.SolanaSlotTime = o.SolanaSlots
	r := newWorkloadReport("backfill", map[string]any{
		"networks": o.Networks, "evm_rounds": o.EVMRounds, "evm_blocks_per_round": o.EVMBlocks, "solana_rounds": o.SolanaTxs,
		"solana_slot_ms": msOf(o.SolanaSlots), "backfill_workers": cfg.Backfill.Workers,
		"evm_chunk_blocks": cfg.Backfill.EVMChunkBlocks, "solana_chunk": cfg.Backfill.SolanaChunk,
	})
	o.Progress("starting a fresh stack in %s", dir)
	s, err := startStack(ctx, cfg, dir, o.Logger)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	cpu0, _ := cpuSeconds()
	var workflowIDs []string
	for _, network := range o.Networks {
		var wallet string
		switch network {
		case scan.Etherlink:
			o.Progress("building a wallet history on the local EVM chain: %d rounds × %d blocks", o.EVMRounds, o.EVMBlocks)
			h, err := testchain.BuildEVMHistory(ctx, s.net.EVM, testchain.EVMOptions{Rounds: o.EVMRounds, BlocksPerRound: o.EVMBlocks})
			if err != nil {
				return r, fmt.Errorf("bench backfill: EVM history: %w", err)
			}
			wallet = h.Wallet.Hex()
		case scan.Solana:
			o.Progress("building a wallet history on the local Solana devnet: %d rounds", o.SolanaTxs)
			h, err := testchain.BuildSolanaHistory(ctx, s.net.Solana, o.SolanaTxs)
			if err != nil {
				return r, fmt.Errorf("bench backfill: Solana history: %w", err)
			}
			wallet = h.Wallet.PublicKey().String()
		}
		o.Progress("backfilling %s on %s", wallet, network)
		m, ids, err := backfillOne(ctx, s, o, network, wallet)
		if err != nil {
			return r, err
		}
		r.Backfill = append(r.Backfill, m)
		workflowIDs = append(workflowIDs, ids...)
	}
	r.finish(cpu0)
	if r.Actions, err = countActions(ctx, s.node.Client, workflowIDs); err != nil {
		return r, err
	}
	r.Actions.Heartbeats = s.rpcs.get("RecordActivityTaskHeartbeat")
	r.Actions.total()
	return r, nil
}

// backfillOne adds the wallet on one network and follows it until done.
func backfillOne(ctx context.Context, s *stack, o BackfillOptions, network, wallet string) (BackfillMeasured, []string, error) {
	m := BackfillMeasured{Network: network, Wallet: wallet}
	api := "http://" + s.node.APIAddr() + "/v1/wallets"
	body := fmt.Sprintf(`{"address":%q,"networks":[%q]}`, wallet, network)
	var status walletView
	start := time.Now()
	if _, err := apiJSON(ctx, "POST", api, []byte(body), &status); err != nil {
		return m, nil, err
	}
	m.Wallet = status.Address
	err := poll(ctx, o.PollEvery, o.Limit, "backfill of "+wallet, func() (bool, error) {
		if _, err := apiJSON(ctx, "GET", api+"/"+m.Wallet, nil, &status); err != nil {
			return false, err
		}
		for _, n := range status.Networks {
			if n.Network == network && m.ScanS == 0 && slices.Contains([]string{"COMPLETED", "FAILED", "ABANDONED"}, n.Status) {
				m.ScanS = time.Since(start).Seconds()
			}
		}
		return status.Done, nil
	})
	if err != nil {
		return m, nil, err
	}
	m.DoneS = round2(time.Since(start).Seconds())
	m.ScanS = round2(m.ScanS)
	for _, n := range status.Networks {
		if n.Network == network {
			m.Status, m.Unit, m.Scanned, m.Transfers = n.Status, n.Progress.Unit, n.Progress.Scanned, n.Transfers
		}
	}
	m.Reconciled = status.Reconciled
	if m.ScanS > 0 {
		m.UnitsPerSec = round2(float64(m.Scanned) / m.ScanS)
		m.TransfersPerSec = round2(float64(m.Transfers) / m.ScanS)
	}
	ids := []string{workflows.WalletWorkflowID(m.Wallet), workflows.BackfillWorkflowID(network, m.Wallet)}
	return m, ids, nil
}

// walletView is the part of GET /v1/wallets/{address} the bench reads.
type walletView struct {
	Address  string `json:"address"`
	Done     bool   `json:"done"`
	Networks []struct {
		Network  string `json:"network"`
		Status   string `json:"status"`
		Progress struct {
			Unit    string `json:"unit"`
			Scanned uint64 `json:"scanned"`
		} `json:"progress"`
		Transfers int `json:"transfers"`
	} `json:"networks"`
	Reconciled *bool `json:"reconciled"`
}

// workDir is dir/name, or a fresh temporary directory removed by cleanup.
func workDir(dir, name string) (string, func(), error) {
	if dir != "" {
		d := filepath.Join(dir, name)
		return d, func() {}, os.MkdirAll(d, 0o755)
	}
	tmp, err := os.MkdirTemp("", "keeper-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}
