package anchor

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Dispatcher turns pending outbox rows into batches and starts one
// AnchorBatch workflow per batch. It never blocks intake: evidence stored
// while Temporal is down is started once it is back. Batching is adaptive, like group commit: a
// chain with no batch awaiting submission gets the pending evidence at once;
// otherwise the next batch grows until MaxItems or MaxWait. Under load (the
// chain's previous batch held more than one evidence) a batch also grows
// until MinGap after the previous one. Cost is bounded by time: a chain's
// next batch waits until Interval after its previous one, whatever the load,
// unless it is full or holds priority 1 evidence (docs/anchoring.md,
// cadence).
type Dispatcher struct {
	Store    Outbox
	Temporal Temporal
	MaxItems int
	MaxWait  time.Duration
	MinGap   time.Duration // least time between two batches of a chain under load (0 = none)
	// MaxQueued is how many of a chain's batches Temporal may have work for
	// at once, not counting those that only await finality
	// (Store.QueuedBatches); while that many do, no more are formed (0 = no
	// limit). Pending evidence waits in the store instead of in Temporal's
	// queues, so an overloaded server works at its ceiling rather than
	// drowning in tasks that time out before a worker gets them.
	MaxQueued int
	// Interval is the least time between two batches of a chain, whatever
	// the load (0 or nil = none).
	Interval func(chain string) time.Duration
	Sweep    time.Duration // safety-net poll when nothing wakes the dispatcher
	Policy   workflows.AnchorPolicy
	Logger   *slog.Logger

	// NoEagerStart sends every start through the server's routing. Versioned
	// workers need it: the server hands an eagerly started workflow to this
	// process's worker whatever version the deployment routes new workflows to.
	NoEagerStart bool

	// OnStart, when set, is called after each batch's workflow is started.
	OnStart func(store.Batch)
	// Traces, when set, traces each start under its evidence's requests.
	Traces *telemetry.Traces
	// Cadence, when set, counts what the cadence did.
	Cadence *Cadence

	last map[string]lastBatch // by chain, the last batch this dispatcher formed
	held bool                 // the last tick left pending evidence to grow (hold)
}

// Temporal is the Temporal client as the dispatcher needs it: it starts
// AnchorBatch workflows (client.Client is one).
type Temporal interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Outbox is the store as the anchoring dispatcher needs it: pending
// evidence, the batches formed from it, and a signal when either changes
// (*store.Store).
type Outbox interface {
	Changed() <-chan struct{}
	PendingUpTo(ctx context.Context, upTo int) (map[string]store.PendingInfo, error)
	FormBatchAfter(ctx context.Context, chain string, maxItems int, seen time.Time) (b store.Batch, ok bool, err error)
	FormedBatches(ctx context.Context) ([]store.Batch, error)
	QueuedBatches(ctx context.Context, chain string) (int, error)
	AwaitingSubmit(ctx context.Context, chain string) (bool, error)
	LastBatch(ctx context.Context, chain string) (time.Time, int, error)
	BatchDigests(ctx context.Context, id int64) ([][]byte, error)
	MarkBatchStarted(ctx context.Context, id int64) error
}

type lastBatch struct {
	at   time.Time
	size int
}

// wakeGap is the least time between two ticks woken by store changes. A
// lone evidence after a quiet spell is dispatched at once.
const wakeGap = 10 * time.Millisecond

// heldWakeGap replaces wakeGap while the last tick held a chain's pending
// evidence back (its interval or gap not over): more evidence then only
// matters once it fills a batch or is urgent, and looking every 10 ms for
// that (a count of up to KEEPER_BATCH_MAX_ITEMS rows per chain) cost a tenth
// of keeper bench's CPU at 6,000 evidence/s.
const heldWakeGap = 50 * time.Millisecond

// queuedRecheck is how soon a chain held back by MaxQueued is looked at
// again when nothing in the store changed meanwhile (a finality wait being
// recorded does not wake the dispatcher).
const queuedRecheck = 100 * time.Millisecond

// temporalRetry is how soon the dispatcher tries again after Temporal refused
// a start (down, overloaded): evidence keeps queuing locally meanwhile.
const temporalRetry = time.Second

// Run dispatches until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		changed := d.Store.Changed() // taken before the tick so no wake-up is lost
		ticked := time.Now()
		wait := d.tick(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-changed:
			// Under load every intake commit wakes the dispatcher; a burst of
			// them is served by one tick instead of one tick each.
			least := wakeGap
			if d.held {
				least = heldWakeGap
			}
			if gap := least - time.Since(ticked); gap > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(gap):
				}
			}
		case <-t.C:
		}
		t.Stop()
	}
}

// tick does all the work that is due and returns how long until more may be.
func (d *Dispatcher) tick(ctx context.Context) time.Duration {
	wait := d.Sweep
	if d.last == nil {
		d.last = map[string]lastBatch{}
	}
	d.held = false
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
	// Rounds of at most one batch per chain, so a chain with a deep backlog
	// (one evidence per batch, say) never starves the others.
	for ctx.Err() == nil {
		pending, err := d.Store.PendingUpTo(ctx, d.MaxItems)
		if err != nil {
			d.Logger.Error("dispatcher: pending chains", "error", err)
			return temporalRetry
		}
		formedAny := false
		for _, chain := range slices.Sorted(maps.Keys(pending)) {
			p := pending[chain]
			if p.Count == 0 {
				continue
			}
			if d.MaxQueued > 0 {
				queued, err := d.Store.QueuedBatches(ctx, chain)
				if err != nil {
					d.Logger.Error("dispatcher: queued batches", "chain", chain, "error", err)
					return temporalRetry
				}
				if queued >= d.MaxQueued {
					wait = min(wait, queuedRecheck)
					continue
				}
			}
			busy, err := d.Store.AwaitingSubmit(ctx, chain)
			if err != nil {
				d.Logger.Error("dispatcher: chain state", "chain", chain, "error", err)
				return temporalRetry
			}
			last, err := d.lastBatch(ctx, chain)
			if err != nil {
				d.Logger.Error("dispatcher: last batch", "chain", chain, "error", err)
				return temporalRetry
			}
			hold, urgent := d.hold(chain, p, busy, last)
			if hold > 0 {
				wait = min(wait, hold)
				d.held = true
				continue
			}
			b, ok, err := d.Store.FormBatchAfter(ctx, chain, d.MaxItems, d.seen(chain, p, last, urgent))
			if err != nil {
				d.Logger.Error("dispatcher: form batch", "chain", chain, "error", err)
				return temporalRetry
			}
			if !ok {
				continue
			}
			// Counted once formed: the batch exists whether or not its
			// workflow starts now (a failed start is retried from the store).
			d.last[chain] = lastBatch{at: time.Now(), size: b.Size}
			d.Cadence.formed(chain, b.Size, urgent)
			formedAny = true
			if err := d.start(ctx, b); err != nil {
				d.Logger.Warn("dispatcher: start batch workflow; will retry", "batch", b.ID, "chain", chain, "error", err)
				return temporalRetry
			}
		}
		if !formedAny {
			break
		}
	}
	return max(wait, time.Millisecond)
}

// lastBatch is the chain's previous batch: the newest in the store, formed
// here or by another node's dispatcher, or the one this dispatcher formed
// if that is newer (the store's clock is in milliseconds). Read from the
// store, several API nodes keep one cadence and one MinGap between them:
// each of two nodes that only knew its own batches formed one as soon as
// the other had, in batches half the size (docs/benchmarks.md, 2026-11-28),
// and a restart does not reset them.
func (d *Dispatcher) lastBatch(ctx context.Context, chain string) (lastBatch, error) {
	last := d.last[chain]
	if d.interval(chain) == 0 && d.MinGap == 0 {
		return last, nil
	}
	at, size, err := d.Store.LastBatch(ctx, chain)
	if err != nil {
		return lastBatch{}, err
	}
	if at.After(last.at) {
		last = lastBatch{at: at, size: size}
	}
	return last, nil
}

// seen is the newest batch a decision to form the chain's next one rested
// on, for FormBatchAfter: with a cadence to keep (an interval or MinGap), a
// node that decided at the moment another node formed a batch forms none
// (two such nodes made batches a quarter of one node's size, and four times
// the Temporal actions and transactions: docs/benchmarks.md, 2026-11-28).
// Zero, form regardless: a full batch, priority 1 skipping the interval, or
// no cadence.
func (d *Dispatcher) seen(chain string, p store.PendingInfo, last lastBatch, urgent bool) time.Time {
	if urgent || p.Count >= d.MaxItems || (d.interval(chain) == 0 && d.MinGap == 0) || last.at.IsZero() {
		return time.Time{}
	}
	return last.at
}

func (d *Dispatcher) interval(chain string) time.Duration {
	if d.Interval == nil {
		return 0
	}
	return d.Interval(chain)
}

// hold is how much longer the chain's next batch should grow (0: form it
// now), and whether forming it now skips the interval for priority 1. A full
// batch goes at once. Otherwise it waits while an earlier batch awaits
// submission, up to MaxWait after its oldest evidence arrived; when the
// chain's previous batch held more than one evidence (the chain is under
// load), until MinGap after that batch, so that under load each transaction
// (and each workflow) carries many evidence; and, whatever the load, until
// Interval after the previous batch, unless priority 1 evidence waits.
func (d *Dispatcher) hold(chain string, p store.PendingInfo, busy bool, last lastBatch) (time.Duration, bool) {
	if p.Count >= d.MaxItems {
		return 0, false
	}
	var hold time.Duration
	if busy {
		hold = d.MaxWait - time.Since(p.Oldest)
	}
	// Only a chain under load waits for MinGap: after a batch of one, the
	// next lone evidence goes out at once.
	if last.size > 1 && d.MinGap > 0 {
		hold = max(hold, d.MinGap-time.Since(last.at))
	}
	urgent := false
	if iv := d.interval(chain); iv > 0 && !last.at.IsZero() {
		if due := iv - time.Since(last.at); due > 0 {
			if p.Urgent {
				urgent = hold <= 0
			} else {
				hold = max(hold, due)
			}
		}
	}
	return max(hold, 0), urgent
}

// start starts a batch's workflow. The workflow id de-duplicates: a batch
// whose workflow already exists (a crash after starting, before recording
// it) counts as started.
func (d *Dispatcher) start(ctx context.Context, b store.Batch) error {
	ctx, end := d.Traces.StartBatch(ctx, telemetry.Batch{Chain: b.Chain, ID: b.ID, Size: b.Size,
		Digests: func(ctx context.Context) ([][]byte, error) { return d.Store.BatchDigests(ctx, b.ID) }})
	defer end()
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
		// With a worker in this process (keeper dev), the start's answer
		// carries the first workflow task: one round trip through matching
		// less. Without one, the SDK starts the workflow as usual.
		EnableEagerStart: !d.NoEagerStart,
	}
	in := workflows.AnchorBatchInput{BatchID: b.ID, Chain: b.Chain, Size: b.Size, Priority: b.Priority, Policy: d.Policy,
		Revision: workflows.AnchorRevision}
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
