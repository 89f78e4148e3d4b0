package anchor

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

// Activities are AnchorBatch's activities, with their dependencies.
type Activities struct {
	Store       Batches
	Chains      map[string]chains.Adapter
	Backoff     retry.Schedule // submit and confirm attempts (retry.Anchor)
	ConfirmPoll time.Duration  // how often ConfirmAnchor asks the chain
	Metrics     *Metrics       // nil counts nothing
	Logger      *slog.Logger
	// Watcher, when set, completes ConfirmAnchor attempts asynchronously;
	// nil: each attempt waits for finality in its activity slot.
	Watcher *Watcher
	// Log, when set, is the evidence log: each batch's anchor commits to a
	// checkpoint of it. nil: each batch anchors its own Merkle root (the
	// format of receipts before version 3).
	Log LogCheckpoints
}

// Batches is the store as anchoring needs it: the batches it submits,
// confirms or dead-letters, their transactions' journal, the checkpoints a
// batch moves to (the log pins it to its first), and the watcher's
// finality waits (*store.Store).
type Batches interface {
	TxJournal
	FinalityWaits
	GetBatch(ctx context.Context, id int64) (store.Batch, error)
	BatchLeaves(ctx context.Context, id int64) ([][]byte, error)
	MarkSubmitted(ctx context.Context, id int64, root [32]byte, ref string) error
	RecordAttempt(ctx context.Context, id int64, attempts int, lastErr string) error
	ConfirmBatch(ctx context.Context, id int64, c store.Confirmation) error
	DeadLetterBatch(ctx context.Context, id int64, lastErr string) error
	AdvanceBatchCheckpoint(ctx context.Context, batchID int64, size uint64) (uint64, error)
	CheckpointAt(ctx context.Context, size uint64) (store.LogCheckpoint, error)
}

// LogCheckpoints is the evidence log as anchoring needs it (logsvc.Sequencer).
type LogCheckpoints interface {
	// PinBatch returns the checkpoint a batch's anchor commits to, fixed
	// by its first call (taking the batch's evidence into the log and
	// signing a checkpoint of them when needed); store.ErrBatchBeforeLog
	// for a batch whose first transaction predates the log.
	PinBatch(ctx context.Context, batchID int64) (store.LogCheckpoint, error)
	// CheckpointFor returns a signed checkpoint of at least need entries.
	CheckpointFor(ctx context.Context, need uint64) (store.LogCheckpoint, error)
	// KeyHash is the hash of the key that signs the log.
	KeyHash() uint32
}

// byName are the activities by the names AnchorBatch calls them
// (workflows.*Activity): each method under its own name, the name
// registering the struct gave it before workflows called them by name, and
// that recorded histories hold.
func (a *Activities) byName() map[string]any {
	return map[string]any{
		workflows.SubmitAnchorActivity:   a.SubmitAnchor,
		workflows.ConfirmAnchorActivity:  a.ConfirmAnchor,
		workflows.RecordReceiptsActivity: a.RecordReceipts,
		workflows.DeadLetterActivity:     a.DeadLetter,
	}
}

func (a *Activities) adapter(chain string) (chains.Adapter, error) {
	ad, ok := a.Chains[chain]
	if !ok {
		return nil, retry.Permanent(fmt.Errorf("chain %q is not configured on this worker", chain))
	}
	return ad, nil
}

// SubmitAnchor computes the batch's Merkle root and has the chain adapter
// broadcast one transaction for it. A retry (after a crash or a transient
// error) rebroadcasts the transaction the adapter journaled, never a second one.
func (a *Activities) SubmitAnchor(ctx context.Context, in workflows.BatchRef) (workflows.SubmitResult, error) {
	attempt := a.countAttempt(ctx, in.Chain, in.PriorAttempts)
	res, err := a.submit(ctx, in)
	if err != nil {
		err = fmt.Errorf("submit batch %d on %s: %w", in.BatchID, in.Chain, err)
		a.recordAttempt(ctx, in, attempt, err)
		return workflows.SubmitResult{}, anchorFailure(a.Backoff, err, attempt)
	}
	a.Metrics.transaction(in.Chain, OutcomeSubmitted)
	a.log(ctx, in).Info("anchor submitted", "tx", res.TxRef, "root", res.Root)
	return res, nil
}

func (a *Activities) submit(ctx context.Context, in workflows.BatchRef) (workflows.SubmitResult, error) {
	ad, err := a.adapter(in.Chain)
	if err != nil {
		return workflows.SubmitResult{}, err
	}
	an, err := a.anchorOf(ctx, in.BatchID)
	if err != nil {
		return workflows.SubmitResult{}, err
	}
	root := an.Root
	if an.Checkpoint != nil {
		fixed := an
		an.Advance = func(ctx context.Context) (chains.Anchor, error) {
			next, err := a.advance(ctx, fixed)
			if err == nil {
				root = next.Root
			}
			return next, err
		}
	}
	sctx, span := chainSpan(ctx, "submit", in)
	ref, err := ad.Submit(sctx, an, Journal(a.Store))
	endSpan(span, err)
	if err != nil {
		return workflows.SubmitResult{}, err
	}
	if err := a.Store.MarkSubmitted(ctx, in.BatchID, root, ref); err != nil {
		return workflows.SubmitResult{}, err
	}
	return workflows.SubmitResult{Root: hex.EncodeToString(root[:]), TxRef: ref}, nil
}

// anchorOf is what the batch's transaction carries: the checkpoint of the
// evidence log the batch commits to, fixed by its first submit, or, for a
// batch whose first transaction predates the log (or a worker without it),
// the batch's own Merkle root.
func (a *Activities) anchorOf(ctx context.Context, batchID int64) (chains.Anchor, error) {
	if a.Log == nil {
		return a.rootAnchor(ctx, batchID)
	}
	cp, err := a.Log.PinBatch(ctx, batchID)
	switch {
	case errors.Is(err, store.ErrBatchBeforeLog):
		return a.rootAnchor(ctx, batchID)
	case errors.Is(err, store.ErrEmptyBatch):
		return chains.Anchor{}, retry.Permanent(err)
	case err != nil:
		return chains.Anchor{}, err
	}
	return a.anchorAt(batchID, cp), nil
}

// rootAnchor is the anchor of a batch carrying its own Merkle root.
func (a *Activities) rootAnchor(ctx context.Context, batchID int64) (chains.Anchor, error) {
	tree, err := a.tree(ctx, batchID)
	if err != nil {
		return chains.Anchor{}, err
	}
	return chains.Anchor{BatchID: batchID, Root: tree.Root()}, nil
}

// advance moves the batch of fixed, an anchor of a checkpoint, to the log's
// newest checkpoint (chains.Anchor.Advance): its evidence is in every
// bigger tree, and the batches anchored meanwhile committed to no bigger
// one than that. A log that has not grown since leaves fixed as it is,
// with nothing written.
func (a *Activities) advance(ctx context.Context, fixed chains.Anchor) (chains.Anchor, error) {
	cp, err := a.Log.CheckpointFor(ctx, fixed.Checkpoint.Size)
	if err != nil {
		return chains.Anchor{}, err
	}
	if cp.Size <= fixed.Checkpoint.Size {
		return fixed, nil
	}
	size, err := a.Store.AdvanceBatchCheckpoint(ctx, fixed.BatchID, cp.Size)
	if err != nil {
		return chains.Anchor{}, err
	}
	return a.checkpointAnchor(ctx, fixed.BatchID, size)
}

// checkpointAnchor is the anchor of a batch committing to the log's
// checkpoint of size entries.
func (a *Activities) checkpointAnchor(ctx context.Context, batchID int64, size uint64) (chains.Anchor, error) {
	cp, err := a.Store.CheckpointAt(ctx, size)
	if err != nil {
		return chains.Anchor{}, err
	}
	return a.anchorAt(batchID, cp), nil
}

// anchorAt is the anchor of a batch committing to the log's checkpoint cp.
func (a *Activities) anchorAt(batchID int64, cp store.LogCheckpoint) chains.Anchor {
	return chains.Anchor{BatchID: batchID, Root: cp.Root,
		Checkpoint: &receipt.CheckpointRef{KeyHash: a.Log.KeyHash(), Size: cp.Size, Root: cp.Root}}
}

func (a *Activities) tree(ctx context.Context, batchID int64) (*merkle.Tree, error) {
	leaves, err := a.Store.BatchLeaves(ctx, batchID)
	if err != nil {
		return nil, err
	}
	if len(leaves) == 0 {
		return nil, retry.Permanent(fmt.Errorf("batch %d has no evidence", batchID))
	}
	return merkle.Build(leaves)
}

// ConfirmAnchor waits until the batch's transaction is final on its chain.
// With a finality watcher (every worker keeper runs) it records the wait and
// returns at once, holding no activity slot: the watcher completes the
// attempt later (docs/anchoring.md, "Waiting for finality"). An attempt
// scheduled with a heartbeat timeout (a batch started by a keeper before
// the watcher) waits in its slot, heartbeating, as it was scheduled to. A
// dropped transaction is reported, not failed: the workflow submits again.
func (a *Activities) ConfirmAnchor(ctx context.Context, in workflows.BatchRef) (workflows.ConfirmResult, error) {
	attempt := a.countAttempt(ctx, in.Chain, 0)
	if a.Watcher != nil && activity.GetInfo(ctx).HeartbeatTimeout == 0 {
		_, err := a.adapter(in.Chain)
		if err == nil {
			err = a.Watcher.register(ctx, in, attempt)
		}
		if err != nil {
			return a.settle(ctx, in, attempt, workflows.ConfirmResult{}, err)
		}
		return workflows.ConfirmResult{}, activity.ErrResultPending
	}
	res, err := a.confirm(ctx, in, Journal(a.Store), func(ref string) { activity.RecordHeartbeat(ctx, ref) })
	return a.settle(ctx, in, attempt, res, err)
}

// settle turns the outcome of waiting for a batch's finality into
// ConfirmAnchor's result, counting and logging it.
func (a *Activities) settle(ctx context.Context, in workflows.BatchRef, attempt int32, res workflows.ConfirmResult, err error) (workflows.ConfirmResult, error) {
	if err != nil {
		err = fmt.Errorf("confirm batch %d on %s: %w", in.BatchID, in.Chain, err)
		a.recordAttempt(ctx, in, attempt, err)
		return workflows.ConfirmResult{}, anchorFailure(a.Backoff, err, attempt)
	}
	if res.Dropped {
		a.Metrics.dropped(in.Chain)
		a.log(ctx, in).Warn("anchor transaction dropped", "tx", res.TxRef, "detail", res.Detail)
		return res, nil
	}
	since := a.sinceFirstBroadcast(ctx, in.BatchID)
	a.Metrics.final(in.Chain, since)
	a.log(ctx, in).Info("anchor final", "tx", res.TxRef, "block", res.Block, "since_submit", since.Round(time.Millisecond).String())
	return res, nil
}

// confirm asks the chain until the batch's transaction is final, dropped or
// failed, reading the batch's records from j and calling beat (when set)
// after each answer that it is pending.
func (a *Activities) confirm(ctx context.Context, in workflows.BatchRef, j chains.Journal, beat func(ref string)) (workflows.ConfirmResult, error) {
	ad, err := a.adapter(in.Chain)
	if err != nil {
		return workflows.ConfirmResult{}, err
	}
	// An adapter whose Status waits for its poller's next round is asked
	// again at once, so finality is seen on the first round after it; the
	// others are asked every ConfirmPoll.
	paced := chains.IsPaced(ad)
	poll := time.NewTicker(a.ConfirmPoll)
	defer poll.Stop()
	for {
		sctx, span := chainSpan(ctx, "status", in)
		st, err := ad.Status(sctx, in.BatchID, j)
		span.SetAttributes(attribute.String("keeper.tx_state", st.State.String()))
		endSpan(span, err)
		if err != nil {
			return workflows.ConfirmResult{}, err
		}
		switch st.State {
		case chains.Final:
			return workflows.ConfirmResult{TxRef: st.Ref, Block: st.Block, BlockTime: st.BlockTime, BlockHash: st.BlockHash, Finality: st.Finality}, nil
		case chains.Dropped:
			return workflows.ConfirmResult{Dropped: true, Detail: st.Detail, TxRef: st.Ref}, nil
		case chains.Failed:
			a.Metrics.transaction(in.Chain, OutcomeFailed)
			return workflows.ConfirmResult{}, retry.Permanent(fmt.Errorf("transaction %s failed on chain: %s", st.Ref, st.Detail))
		}
		if beat != nil {
			beat(st.Ref)
		}
		if paced {
			if err := ctx.Err(); err != nil {
				return workflows.ConfirmResult{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return workflows.ConfirmResult{}, ctx.Err()
		case <-poll.C:
		}
	}
}

// RecordReceipts marks the batch confirmed by its final transaction, with
// the network its chain adapter's node is on, making its evidence's receipts
// available (each audit path is computed from the batch's leaves when the
// receipt is read).
func (a *Activities) RecordReceipts(ctx context.Context, in workflows.BatchRef, c workflows.ConfirmResult) error {
	attempt := a.countAttempt(ctx, in.Chain, 0)
	ad, err := a.adapter(in.Chain)
	if err != nil {
		return anchorFailure(a.Backoff, err, attempt)
	}
	network, err := chains.NetworkOf(ctx, ad)
	if err != nil {
		return anchorFailure(a.Backoff, fmt.Errorf("record receipts of batch %d on %s: %w", in.BatchID, in.Chain, err), attempt)
	}
	err = a.Store.ConfirmBatch(ctx, in.BatchID, store.Confirmation{TxRef: c.TxRef, Block: c.Block, BlockTime: c.BlockTime,
		Network: network, BlockHash: c.BlockHash, Finality: c.Finality, Account: chains.AccountOf(ad)})
	if err != nil {
		return anchorFailure(a.Backoff, err, attempt)
	}
	a.Metrics.batch(in.Chain, OutcomeConfirmed)
	a.log(ctx, in).Info("receipts recorded", "tx", c.TxRef)
	return nil
}

// sinceFirstBroadcast is how long ago the batch's first transaction was
// journaled, just before its first broadcast (0 when unknown).
func (a *Activities) sinceFirstBroadcast(ctx context.Context, batchID int64) time.Duration {
	recs, err := a.Store.Transactions(ctx, batchID)
	if err != nil || len(recs) == 0 {
		return 0
	}
	return time.Since(recs[0].CreatedAt)
}

// DeadLetter marks a batch's evidence dead-lettered with the error that ended it.
func (a *Activities) DeadLetter(ctx context.Context, in workflows.DeadLetterInput) error {
	b, err := a.Store.GetBatch(ctx, in.BatchID)
	if err != nil {
		return err
	}
	if err := a.Store.DeadLetterBatch(ctx, in.BatchID, in.Error); err != nil {
		return err
	}
	a.Metrics.deadLetter(b.Chain, b.Size)
	a.log(ctx, workflows.BatchRef{BatchID: b.ID, Chain: b.Chain}).Error("batch dead-lettered", "evidence", b.Size, "error", in.Error)
	return nil
}

// countAttempt counts this activity attempt in the metrics and returns its
// number (1 for the first), after the step's prior attempts.
func (a *Activities) countAttempt(ctx context.Context, chain string, prior int32) int32 {
	info := activity.GetInfo(ctx)
	n := prior + info.Attempt
	a.Metrics.attempt(chain, info.ActivityType.Name, n)
	return n
}

func (a *Activities) recordAttempt(ctx context.Context, in workflows.BatchRef, attempt int32, err error) {
	log := a.log(ctx, in)
	log.Warn("attempt failed", "error", err, "permanent", retry.IsPermanent(err))
	if rerr := a.Store.RecordAttempt(ctx, in.BatchID, int(attempt), err.Error()); rerr != nil {
		log.Warn("record attempt", "error", rerr)
	}
}
