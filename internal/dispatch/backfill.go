package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// SignalWithStarter signals a workflow, starting it first when it is not
// running; a Temporal client is one.
type SignalWithStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

// WalletQueue is the store as the backfill dispatcher needs it: wallet
// work not yet handed to Temporal, and the sync items Reconcile and
// Recheck look over (*store.Store).
type WalletQueue interface {
	UnstartedWallets(ctx context.Context, limit int) ([]store.WalletStart, error)
	MarkWalletStarted(ctx context.Context, ws store.WalletStart) error
	DueItems(ctx context.Context, now, quiet time.Time, after store.ItemKey, limit int) ([]store.SyncStatus, error)
	WalletStatus(ctx context.Context, wallet string) ([]store.SyncStatus, error)
	Requeue(ctx context.Context, seen store.SyncStatus) (bool, error)
}

// Backfills hands stored wallet work to Temporal as a WalletSync per wallet
// (workflow id wallet-<address>, so a wallet has one), signalled with the
// networks to (re)start. Work added while Temporal is down starts once it is
// back.
type Backfills struct {
	Store    WalletQueue
	Temporal SignalWithStarter
	Policy   workflows.BackfillPolicy
	Sweep    time.Duration // safety-net pass over unstarted work
	Logger   *slog.Logger
	// Runs, when set, lets the dispatcher tell whether an item's workflows
	// run, so that Reconcile and Recheck can hand Temporal again the items
	// none works on (docs/backfill.md, "Outages").
	Runs Describer

	wakeOnce sync.Once
	wake     chan struct{}
	mu       sync.Mutex
	rechecks map[string]bool // wallets to Recheck on the next pass
}

func (w *Backfills) wakeup() chan struct{} {
	w.wakeOnce.Do(func() { w.wake = make(chan struct{}, 1) })
	return w.wake
}

// Wake makes Run start new work now rather than at its next sweep.
func (w *Backfills) Wake() {
	select {
	case w.wakeup() <- struct{}{}:
	default:
	}
}

// Run starts stored work until ctx is done.
func (w *Backfills) Run(ctx context.Context) {
	sweep(ctx, w.Sweep, w.wakeup(), func(ctx context.Context) error {
		if err := w.recheckWallets(ctx); err != nil {
			return err
		}
		return w.startDue(ctx)
	}, w.Logger, "wallets: start backfill workflows; will retry")
}

// sweep runs pass every interval, or at once when woken, until ctx is
// done; a pass that fails is logged as failed and retried soon.
func sweep(ctx context.Context, every time.Duration, wake <-chan struct{}, pass func(context.Context) error, log *slog.Logger, failed string) {
	for {
		wait := every
		if err := pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn(failed, "error", err)
			wait = min(wait, temporalRetry)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (w *Backfills) startDue(ctx context.Context) error {
	for {
		due, err := w.Store.UnstartedWallets(ctx, 100)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, ws := range due {
			if err := w.start(ctx, ws); err != nil {
				return fmt.Errorf("wallet %s: %w", ws.Wallet, err)
			}
			if err := w.Store.MarkWalletStarted(ctx, ws); err != nil {
				return err
			}
		}
	}
}

// start signals the wallet's WalletSync with the networks to (re)start,
// starting it when it is not running.
func (w *Backfills) start(ctx context.Context, ws store.WalletStart) error {
	nets := make([]workflows.NetworkGen, len(ws.Networks))
	for i, n := range ws.Networks {
		nets[i] = workflows.NetworkGen{Network: n.Network, Gen: n.Gen}
	}
	opts := client.StartWorkflowOptions{
		ID:                    workflows.WalletWorkflowID(ws.Wallet),
		TaskQueue:             workflows.BackfillTaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A wallet has one WalletSync: a running one takes the signal.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAStatus.ValueSet("syncing")),
	}
	in := workflows.WalletSyncInput{Wallet: ws.Wallet, Networks: nets, Policy: w.Policy}
	_, err := w.Temporal.SignalWithStartWorkflow(ctx, opts.ID, workflows.SignalSync, workflows.SyncSignal{Networks: nets}, opts, workflows.WalletSync, in)
	return err
}
