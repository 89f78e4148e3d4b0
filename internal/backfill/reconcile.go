package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/sweep"
	"github.com/keeperhq/keeper/internal/workflows"
)

// reconcilePage is how many due items a reconciliation reads at a time.
const reconcilePage = 100

// RunReconcile reconciles at once and then every interval (0: a minute)
// until ctx is done (docs/backfill.md, "Outages"). Workers run it: whatever
// stopped a backfill's workflows (a store or Temporal outage that outlasted a
// step, a workflow terminated by hand), its items are handed to Temporal
// again.
func (d *Dispatcher) RunReconcile(ctx context.Context, every time.Duration) {
	every = cmp.Or(every, time.Minute)
	sweep.Run(ctx, every, nil, func(ctx context.Context) error {
		n, err := d.Reconcile(ctx, time.Now().Add(-every))
		if n > 0 {
			d.Logger.Warn("wallets: backfill items without a live workflow were queued again", "items", n)
		}
		return err
	}, d.Logger, "wallets: reconcile backfill items; will retry")
}

// Reconcile hands Temporal again every item that is due (PENDING or
// RUNNING, or FAILED past its next retry time), unchanged since quiet, and
// has no live workflow: it requeues the item (a new generation, its
// checkpoint and retry count kept) and signals the wallet's WalletSync,
// starting one when none runs. Workflow ids de-duplicate, so any number of
// workers may reconcile at once. It returns how many items it requeued.
func (d *Dispatcher) Reconcile(ctx context.Context, quiet time.Time) (int, error) {
	requeued := 0
	var after store.ItemKey
	for {
		items, err := d.Store.DueItems(ctx, time.Now(), quiet, after, reconcilePage)
		if err != nil {
			return requeued, err
		}
		for _, it := range items {
			after = store.ItemKey{Wallet: it.Wallet, Network: it.Network}
			n, err := d.requeueStranded(ctx, it, quiet)
			if err != nil {
				return requeued, err
			}
			requeued += n
		}
		if len(items) < reconcilePage {
			break
		}
	}
	return requeued, d.startDue(ctx)
}

// Recheck asks the dispatcher to check a wallet added again while its items
// were PENDING or RUNNING: one without a live workflow is handed to
// Temporal again (docs/backfill.md, "Outages").
func (d *Dispatcher) Recheck(wallet string) {
	d.mu.Lock()
	if d.rechecks == nil {
		d.rechecks = map[string]bool{}
	}
	d.rechecks[wallet] = true
	d.mu.Unlock()
	d.Wake()
}

// recheckWallets checks the wallets Recheck was asked for.
func (d *Dispatcher) recheckWallets(ctx context.Context) error {
	d.mu.Lock()
	wallets := d.rechecks
	d.rechecks = nil
	d.mu.Unlock()
	now := time.Now()
	for wallet := range wallets {
		rows, err := d.Store.WalletStatus(ctx, wallet)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			for _, st := range rows {
				if !st.Handed() || !st.Due(now) {
					continue // the dispatcher hands it, or it is not to be at work
				}
				if _, err = d.requeueStranded(ctx, st, time.Time{}); err != nil {
					break
				}
			}
		}
		if err != nil {
			d.Recheck(wallet) // next pass
			return fmt.Errorf("recheck wallet %s: %w", wallet, err)
		}
	}
	return nil
}

// requeueStranded requeues the item when no workflow works on it: its
// Backfill does not run, and either its row is unchanged since quiet and it
// is RUNNING or FAILED (a WalletSync that runs has seen its child end) or
// the wallet's WalletSync does not run either (none will start it, or finish
// a COMPLETED one's wallet: its requeued scan finds nothing new and the
// wallet is then finished).
func (d *Dispatcher) requeueStranded(ctx context.Context, st store.SyncStatus, quiet time.Time) (int, error) {
	live, err := d.running(ctx, workflows.BackfillWorkflowID(st.Network, st.Wallet))
	if err != nil || live {
		return 0, err
	}
	if st.Status == store.SyncPending || st.Status == store.SyncCompleted || st.UpdatedAt.After(quiet) {
		if live, err = d.running(ctx, workflows.WalletWorkflowID(st.Wallet)); err != nil || live {
			return 0, err
		}
	}
	ok, err := d.Store.Requeue(ctx, st)
	if err != nil || !ok {
		return 0, err
	}
	d.Logger.Info("wallets: backfill item has no live workflow; queued again", "wallet", st.Wallet, "chain", st.Network,
		"status", st.Status, "retry", st.RetryCount, "checkpoint", st.Checkpoint)
	return 1, nil
}

// running reports whether the workflow with this id has a run open.
func (d *Dispatcher) running(ctx context.Context, id string) (bool, error) {
	desc, err := d.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe workflow %s: %w", id, err)
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
