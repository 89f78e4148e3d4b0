package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// walletScenario is one recorded wallet backfill on a local Solana devnet:
// the wallet's WalletSync and its Backfill child are both kept.
type walletScenario struct {
	name  string
	retry time.Duration // KEEPER_BACKFILL_RETRY_BASE_MS (and cap) of the node that runs it
	run   func(ctx context.Context, d *devnet.Devnet, apiAddr, wallet string) error
}

// The wallet scenarios are recorded as files walletFirst… on today's
// WalletSync and Backfill, which tell a wait for a retry and finish the
// wallet meanwhile (workflows' versions backfill-tells-wallet-it-waits and
// wallet-finishes-while-a-network-waits, both 1). Files 07–12 hold the
// first three scenarios recorded before those versions existed: runs a
// keeper of that time started still replay on them, so they are kept as
// recorded and never written again.
const walletFirst = 23

var walletScenarios = []walletScenario{
	// Scanned and reconciled at the first attempt.
	{"completed", 50 * time.Millisecond, func(ctx context.Context, d *devnet.Devnet, api, wallet string) error {
		return addAndWait(ctx, api, wallet, "COMPLETED")
	}},
	// Every attempt fails: five retries on the (shortened) schedule, then ABANDONED.
	{"abandoned", 50 * time.Millisecond, func(ctx context.Context, d *devnet.Devnet, api, wallet string) error {
		d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"})
		defer d.ClearFaults()
		return addAndWait(ctx, api, wallet, "ABANDONED")
	}},
	// Fails, and while it waits an hour for its retry the wallet is added
	// again: the retry runs at once (sync and retry-now signals) and completes.
	{"readded_while_waiting", time.Hour, func(ctx context.Context, d *devnet.Devnet, api, wallet string) error {
		d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"})
		if _, err := postWallet(api, wallet); err != nil {
			return err
		}
		if err := waitNetwork(ctx, api, wallet, func(status, nextRetry string) bool { return status == "FAILED" && nextRetry != "" }); err != nil {
			return err
		}
		d.ClearFaults()
		return addAndWait(ctx, api, wallet, "COMPLETED")
	}},
	// Fails once and completes at its scheduled retry: the wallet is
	// finished while it waits, and again once it completes.
	{"retried", 500 * time.Millisecond, func(ctx context.Context, d *devnet.Devnet, api, wallet string) error {
		d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress", Count: 3}) // one attempt's three reads
		return addAndWait(ctx, api, wallet, "COMPLETED")
	}},
}

// recordWallets records the wallet scenarios with a backfill node of their
// own (the anchoring node has no backfill network), then a wallet on two
// networks beside the anchoring node.
func recordWallets(ctx context.Context, srv *devserver.Server, anchoring *node.Node, dir, outDir string) error {
	d, err := devnet.Start(ctx, devnet.Options{SlotTime: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	defer d.Stop()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, sc := range walletScenarios {
		h, err := testchain.BuildSolanaHistory(ctx, d, 2)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		cfg := config.Default()
		cfg.DataDir, cfg.HTTPAddr, cfg.Chains = filepath.Join(dir, "wallets-"+sc.name), "127.0.0.1:0", []string{scan.Solana}
		cfg.Solana.RPCURL = d.URL()
		cfg.Backfill.RetryBase, cfg.Backfill.RetryCap, cfg.Backfill.Heartbeat = sc.retry, sc.retry, time.Second
		node, err := node.Start(ctx, node.Options{
			Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: quiet,
			Chains:        map[string]chains.Adapter{stub.Name: stub.New(0)},
			ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
		})
		if err != nil {
			return err
		}
		wallet := h.Wallet.PublicKey().String()
		err = sc.run(ctx, d, node.APIAddr(), wallet)
		for j, wid := range []string{workflows.WalletWorkflowID(wallet), workflows.BackfillWorkflowID(scan.Solana, wallet)} {
			if err != nil {
				break
			}
			if err = waitClosed(ctx, node.Client, wid); err != nil {
				break
			}
			kind := []string{"wallet_sync", "backfill"}[j]
			path := filepath.Join(outDir, fmt.Sprintf("%02d_%s_v1_%s.json", walletFirst+2*i+j, kind, sc.name))
			if err = writeHistory(ctx, node.Client, wid, path); err == nil {
				fmt.Printf("%s_%s: workflow %s -> %s\n", kind, sc.name, wid, path)
			}
		}
		node.Shutdown(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	if err := recordTwoNetworks(ctx, anchoring, d, outDir, walletFirst+2*len(walletScenarios)); err != nil {
		return fmt.Errorf("two networks: %w", err)
	}
	return nil
}

// recordTwoNetworks records a wallet on two networks, the second of which
// (a devnet of its own) fails once and waits for its retry: WalletSync
// finishes the first while the second waits, and the second once its retry
// completes. keeper configures one Solana network, so a backfill worker of
// this function's own scans both, beside the anchoring node (which runs
// none), and the workflow is started as the wallet dispatcher would.
func recordTwoNetworks(ctx context.Context, node *node.Node, first *devnet.Devnet, outDir string, file int) error {
	const other = "solana-other"
	second, err := devnet.Start(ctx, devnet.Options{SlotTime: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	defer second.Stop()
	h, err := testchain.BuildSolanaHistory(ctx, first, 2)
	if err != nil {
		return err
	}
	wallet := h.Wallet.PublicKey().String()
	acts := &backfill.Activities{Store: node.Store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Scanners: map[string]scan.Scanner{
		scan.Solana: solscan.New(solscan.Config{Network: scan.Solana, RPCURL: first.URL(), ChunkSize: 10}),
		other:       solscan.New(solscan.Config{Network: other, RPCURL: second.URL(), ChunkSize: 10}),
	}}
	w := backfill.NewWorker(node.Client, acts, worker.Options{ActivityWorkers: 4, DrainTimeout: time.Second})
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	rows, _, err := node.Store.AddWallet(ctx, wallet, []store.NetworkStart{{Network: scan.Solana}, {Network: other}})
	if err != nil {
		return err
	}
	start := store.WalletStart{Wallet: wallet}
	in := workflows.WalletSyncInput{Wallet: wallet, Policy: workflows.BackfillPolicy{
		// Long enough a wait that the first network completes during it.
		Schedule:    workflows.RetrySchedule{MaxRetries: 5, Base: 3 * time.Second, Cap: 3 * time.Second, JitterPct: 25},
		ScanTimeout: time.Minute, Heartbeat: time.Second,
	}}
	for _, r := range rows {
		in.Networks = append(in.Networks, workflows.NetworkGen{Network: r.Network, Gen: r.Gen})
		start.Networks = append(start.Networks, store.NetworkGen{Network: r.Network, Gen: r.Gen})
	}
	second.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress", Count: 3}) // one attempt's three reads
	wid := workflows.WalletWorkflowID(wallet)
	if _, err := node.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: workflows.BackfillTaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SAStatus.ValueSet("syncing"))}, workflows.WalletSync, in); err != nil {
		return err
	}
	if err := node.Store.MarkWalletStarted(ctx, start); err != nil {
		return err
	}
	for i, wid := range []string{wid, workflows.BackfillWorkflowID(scan.Solana, wallet), workflows.BackfillWorkflowID(other, wallet)} {
		if err := waitClosed(ctx, node.Client, wid); err != nil {
			return err
		}
		kind := []string{"wallet_sync", "backfill", "backfill_other"}[i]
		path := filepath.Join(outDir, fmt.Sprintf("%02d_%s_v1_two_networks_one_retried.json", file+i, kind))
		if err := writeHistory(ctx, node.Client, wid, path); err != nil {
			return err
		}
		fmt.Printf("%s_two_networks_one_retried: workflow %s -> %s\n", kind, wid, path)
	}
	return nil
}

func postWallet(api, wallet string) (int, error) {
	resp, err := http.Post("http://"+api+"/v1/wallets", "application/json", strings.NewReader(`{"address":"`+wallet+`"}`))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("add wallet: HTTP %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// addAndWait adds the wallet and waits until its network ends in want.
func addAndWait(ctx context.Context, api, wallet, want string) error {
	if _, err := postWallet(api, wallet); err != nil {
		return err
	}
	var last string
	err := waitNetwork(ctx, api, wallet, func(status, _ string) bool { last = status; return status == want })
	if err != nil {
		return fmt.Errorf("%w (last status %s)", err, last)
	}
	return nil
}

func waitNetwork(ctx context.Context, api, wallet string, ok func(status, nextRetry string) bool) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + api + "/v1/wallets/" + wallet)
		if err != nil {
			return err
		}
		var w struct {
			Done     bool `json:"done"`
			Networks []struct {
				Status      string `json:"status"`
				NextRetryAt string `json:"next_retry_at"`
			} `json:"networks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(w.Networks) == 1 && ok(w.Networks[0].Status, w.Networks[0].NextRetryAt) && (w.Done || w.Networks[0].NextRetryAt != "") {
			return nil
		}
	}
	return fmt.Errorf("wallet %s did not get there within a minute", wallet)
}
