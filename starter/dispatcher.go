package starter

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/store"
	"github.com/keeperhq/keeper/workflows"
)

// Dispatcher turns pending outbox rows into batches and starts one
// AnchorBatch workflow per batch. Batching is adaptive, like group commit: a
// chain with no batch awaiting submission gets the pending evidence at once;
// otherwise the next batch grows until MaxItems or MaxWait.
type Dispatcher struct {
	Store    *store.Store
	Temporal client.Client
	MaxItems int
	MaxWait  time.Duration
	Sweep    time.Duration // safety-net poll when nothing wakes the dispatcher
	Policy   workflows.AnchorPolicy
	Logger   *slog.Logger

	// OnStart, when set, is called after each batch's workflow is started.
	OnStart func(store.Batch)
}

// temporalRetry is how soon the dispatcher tries again after Temporal refused
// a start (down, overloaded): evidence keeps queuing locally meanwhile.
const temporalRetry = time.Second

// Run dispatches until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		changed := d.Store.Changed() // taken before the tick so no wake-up is lost
		wait := d.tick(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// tick does all the work that is due and returns how long until more may be.
func (d *Dispatcher) tick(ctx context.Context) time.Duration {
	wait := d.Sweep
	formed, err := d.Store.FormedBatches(ctx)
	if err != nil {
		d.Logger.Error("dispatcher: list formed batches", "error", err)
		return temporalRetry
	}
	for _, b := range formed {
		if err := d.start(ctx, b); err != nil {
			d.Logger.Warn("dispatcher: start batch workflow; will retry", "batch", b.ID, "chain", b.Chain, "error", err)
			return temporalRetry
		}
	}
	pending, err := d.Store.PendingChains(ctx)
	if err != nil {
		d.Logger.Error("dispatcher: pending chains", "error", err)
		return temporalRetry
	}
	for chain := range pending {
		for {
			p := pending[chain]
			if p.Count == 0 {
				break
			}
			busy, err := d.Store.AwaitingSubmit(ctx, chain)
			if err != nil {
				d.Logger.Error("dispatcher: chain state", "chain", chain, "error", err)
				return temporalRetry
			}
			age := time.Since(p.Oldest)
			if busy && p.Count < d.MaxItems && age < d.MaxWait {
				wait = min(wait, d.MaxWait-age)
				break
			}
			b, ok, err := d.Store.FormBatch(ctx, chain, d.MaxItems)
			if err != nil {
				d.Logger.Error("dispatcher: form batch", "chain", chain, "error", err)
				return temporalRetry
			}
			if !ok {
				break
			}
			if err := d.start(ctx, b); err != nil {
				d.Logger.Warn("dispatcher: start batch workflow; will retry", "batch", b.ID, "chain", chain, "error", err)
				return temporalRetry
			}
			if pending, err = d.Store.PendingChains(ctx); err != nil {
				d.Logger.Error("dispatcher: pending chains", "error", err)
				return temporalRetry
			}
		}
	}
	return max(wait, time.Millisecond)
}

// start starts a batch's workflow. The workflow id de-duplicates: a batch
// whose workflow already exists (a crash after starting, before recording
// it) counts as started.
func (d *Dispatcher) start(ctx context.Context, b store.Batch) error {
	opts := client.StartWorkflowOptions{
		ID:                       workflows.WorkflowID(b.Chain, b.ID),
		TaskQueue:                workflows.AnchorTaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SAChain.ValueSet(b.Chain),
			workflows.SAStatus.ValueSet("formed"),
			workflows.SABatchSize.ValueSet(int64(b.Size)),
		),
		Priority: temporal.Priority{PriorityKey: workflows.TaskPriority(b.Priority)},
	}
	in := workflows.AnchorBatchInput{BatchID: b.ID, Chain: b.Chain, Size: b.Size, Priority: b.Priority, Policy: d.Policy}
	_, err := d.Temporal.ExecuteWorkflow(ctx, opts, workflows.AnchorBatch, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return err
	}
	if err := d.Store.MarkBatchStarted(ctx, b.ID); err != nil {
		return err
	}
	if d.OnStart != nil {
		d.OnStart(b)
	}
	return nil
}
