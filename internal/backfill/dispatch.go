package backfill

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/sweep"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Temporal is the Temporal client as the dispatcher needs it: it signals a
// wallet's WalletSync, starting it when it is not running, and tells
// whether a workflow runs (client.Client is one).
type Temporal interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// Queue is the store as the dispatcher needs it: wallet work not yet
// handed to Temporal, and the sync items Reconcile and Recheck look over
// (*store.Store).
type Queue interface {
	UnstartedWallets(ctx context.Context, limit int) ([]store.WalletStart, error)
	MarkWalletStarted(ctx context.Context, ws store.WalletStart) error
	DueItems(ctx context.Context, now, quiet time.Time, after store.ItemKey, limit int) ([]store.SyncStatus, error)
	WalletStatus(ctx context.Context, wallet string) ([]store.SyncStatus, error)
	Requeue(ctx context.Context, seen store.SyncStatus) (bool, error)
}

// Dispatcher hands stored wallet work to Temporal as a WalletSync per
// wallet (workflow id wallet-<address>, so a wallet has one), signalled
// with the networks to (re)start. Work added while Temporal is down starts
// once it is back. Reconcile and Recheck hand Temporal again the items no
// workflow works on (docs/backfill.md, "Outages").
type Dispatcher struct {
	Store    Queue
	Temporal Temporal
	Policy   workflows.BackfillPolicy
	Sweep    time.Duration // safety-net pass over unstarted work
	Logger   *slog.Logger

	wakeOnce sync.Once
	wake     chan struct{}
	mu       sync.Mutex
	rechecks map[string]bool // wallets to Recheck on the next pass
}

func (d *Dispatcher) wakeup() chan struct{} {
	d.wakeOnce.Do(func() { d.wake = make(chan struct{}, 1) })
	return d.wake
}

// Wake makes Run start new work now rather than at its next sweep.
func (d *Dispatcher) Wake() {
	select {
	case d.wakeup() <- struct{}{}:
	default:
	}
}

// Run starts stored work until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) {
	sweep.Run(ctx, d.Sweep, d.wakeup(), func(ctx context.Context) error {
		if err := d.recheckWallets(ctx); err != nil {
			return err
		}
		return d.startDue(ctx)
	}, d.Logger, "wallets: start backfill workflows; will retry")
}

func (d *Dispatcher) startDue(ctx context.Context) error {
	for {
		due, err := d.Store.UnstartedWallets(ctx, 100)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, ws := range due {
			if err := d.start(ctx, ws); err != nil {
				return fmt.Errorf("wallet %s: %w", ws.Wallet, err)
			}
			if err := d.Store.MarkWalletStarted(ctx, ws); err != nil {
				return err
			}
		}
	}
}

// start signals the wallet's WalletSync with the networks to (re)start,
// starting it when it is not running.
func (d *Dispatcher) start(ctx context.Context, ws store.WalletStart) error {
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
	in := workflows.WalletSyncInput{Wallet: ws.Wallet, Networks: nets, Policy: d.Policy}
	_, err := d.Temporal.SignalWithStartWorkflow(ctx, opts.ID, workflows.SignalSync, workflows.SyncSignal{Networks: nets}, opts, workflows.WalletSync, in)
	return err
}
