// Package workflows holds keeper's workflow definitions: deterministic code
// only. Everything that touches the outside world is an activity.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keeperhq/keeper/activities"
)

// AnchorTaskQueue is the task queue of anchoring workflows and activities.
const AnchorTaskQueue = "keeper-anchor"

// Search attributes keeper sets on its workflows, so they can be filtered in
// the Web UI and with `temporal workflow list --query`.
var (
	SAChain     = temporal.NewSearchAttributeKeyKeyword("KeeperChain")
	SAStatus    = temporal.NewSearchAttributeKeyKeyword("KeeperStatus")
	SABatchSize = temporal.NewSearchAttributeKeyInt64("KeeperBatchSize")
)

// AnchorPolicy carries the retry and timeout knobs into the workflow, so
// they are fixed for the life of a batch and visible in its history.
type AnchorPolicy struct {
	MaxAttempts    int32         // per activity (docs/retries.md: the delay stops growing after 20)
	RetryBase      time.Duration // first retry after an attempt timed out (activities that fail compute their own delay)
	RetryCap       time.Duration // longest retry delay after a timeout
	SubmitTimeout  time.Duration // one submit attempt
	ConfirmTimeout time.Duration // one confirm attempt (waiting for finality)
	Heartbeat      time.Duration // confirm heartbeat timeout
	MaxResubmits   int           // dropped-transaction resubmissions before giving up
}

// AnchorBatchInput identifies the batch: ids only, never digests.
type AnchorBatchInput struct {
	BatchID  int64
	Chain    string
	Size     int
	Priority int // keeper priority 1 (highest) … 10
	Policy   AnchorPolicy
	// Revision is the shape of the workflow the dispatcher asked for, fixed
	// in the batch's first event so a replay takes the path it was run on:
	// 0 (batches started before it existed) runs every step as an activity;
	// RevisionLocalSteps runs SubmitAnchor and RecordReceipts as local
	// activities. A worker that predates a revision ignores the field and
	// runs revision 0, so workers and dispatchers upgrade in any order.
	Revision int
}

// Revisions of AnchorBatch (AnchorBatchInput.Revision).
const (
	// RevisionLocalSteps: SubmitAnchor and RecordReceipts run inside the
	// workflow task that needs them (local activities), and the status goes
	// formed → submitted → confirmed without "submitting". A batch then costs
	// two workflow tasks and one activity task instead of four and three.
	RevisionLocalSteps = 1
	// AnchorRevision is the revision the dispatcher starts batches with.
	AnchorRevision = RevisionLocalSteps
)

// AnchorBatchResult is the batch's outcome.
type AnchorBatchResult struct {
	Status    string // confirmed | dead_letter
	TxRef     string
	Block     uint64
	Resubmits int
	Error     string
}

// WorkflowID is the id of a batch's workflow; it de-duplicates starts.
func WorkflowID(chain string, batchID int64) string {
	return fmt.Sprintf("anchor-%s-%d", chain, batchID)
}

// TaskPriority maps keeper's priority 1–10 onto Temporal's priority keys 1–5.
func TaskPriority(p int) int {
	return min(max((p+1)/2, 1), 5)
}

// AnchorBatch submits one batch's Merkle root to its chain, waits for
// finality and records every evidence's receipt. A dropped transaction is
// submitted again; a permanent failure or exhausted retries dead-letter the
// batch's evidence and fail the workflow.
func AnchorBatch(ctx workflow.Context, in AnchorBatchInput) (AnchorBatchResult, error) {
	var a *activities.Anchor
	ref := activities.BatchRef{BatchID: in.BatchID, Chain: in.Chain}
	retry := &temporal.RetryPolicy{
		// The activities compute the anchor schedule's jittered delay themselves (docs/retries.md); these
		// numbers only apply when an attempt times out instead of failing.
		InitialInterval:    in.Policy.RetryBase,
		BackoffCoefficient: 2,
		MaximumInterval:    in.Policy.RetryCap,
		MaximumAttempts:    in.Policy.MaxAttempts,
	}
	prio := temporal.Priority{PriorityKey: TaskPriority(in.Priority)}
	submitCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.SubmitTimeout,
		RetryPolicy:         retry,
		Priority:            prio,
	})
	confirmCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.ConfirmTimeout,
		HeartbeatTimeout:    in.Policy.Heartbeat,
		RetryPolicy:         retry,
		Priority:            prio,
	})
	recordRetry := &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute}
	recordCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.SubmitTimeout,
		RetryPolicy:         recordRetry,
		Priority:            prio,
	})
	submit := func() workflow.Future { return workflow.ExecuteActivity(submitCtx, a.SubmitAnchor, ref) }
	record := func(conf activities.ConfirmResult) workflow.Future {
		return workflow.ExecuteActivity(recordCtx, a.RecordReceipts, ref, conf)
	}
	local := in.Revision >= RevisionLocalSteps
	if local {
		// A local activity's retries end at its schedule-to-close timeout,
		// which defaults to one attempt's timeout: give it the whole window
		// the activity's retry policy allows.
		submitLocal := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: retryWindow(in.Policy),
			StartToCloseTimeout:    in.Policy.SubmitTimeout,
			RetryPolicy:            retry,
		})
		recordLocal := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: recordWindow,
			StartToCloseTimeout:    in.Policy.SubmitTimeout,
			RetryPolicy:            recordRetry,
		})
		submit = func() workflow.Future { return workflow.ExecuteLocalActivity(submitLocal, a.SubmitAnchor, ref) }
		record = func(conf activities.ConfirmResult) workflow.Future {
			return workflow.ExecuteLocalActivity(recordLocal, a.RecordReceipts, ref, conf)
		}
	}

	var out AnchorBatchResult
	for {
		if !local {
			setStatus(ctx, "submitting")
		}
		var sub activities.SubmitResult
		if err := submit().Get(ctx, &sub); err != nil {
			return deadLetter(recordCtx, in, out, err)
		}
		setStatus(ctx, "submitted")
		var conf activities.ConfirmResult
		if err := workflow.ExecuteActivity(confirmCtx, a.ConfirmAnchor, ref).Get(ctx, &conf); err != nil {
			return deadLetter(recordCtx, in, out, err)
		}
		if conf.Dropped {
			out.Resubmits++
			if out.Resubmits > in.Policy.MaxResubmits {
				return deadLetter(recordCtx, in, out, fmt.Errorf("transaction %s dropped %d times: %s", conf.TxRef, out.Resubmits, conf.Detail))
			}
			log.With(workflow.GetLogger(ctx), "batch_id", in.BatchID, "chain", in.Chain).
				Warn("anchor transaction dropped; submitting again", "tx", conf.TxRef, "detail", conf.Detail)
			continue
		}
		if err := record(conf).Get(ctx, nil); err != nil {
			return out, err
		}
		setStatus(ctx, "confirmed")
		out.Status, out.TxRef, out.Block = "confirmed", conf.TxRef, conf.Block
		return out, nil
	}
}

// recordWindow is how long RecordReceipts, as a local activity, keeps
// retrying (a store that is down): as an activity it retried without end.
const recordWindow = 30 * 24 * time.Hour

// retryWindow bounds every attempt of a step under the policy, with each
// delay at its cap and its jitter (under a second, docs/retries.md).
func retryWindow(p AnchorPolicy) time.Duration {
	return time.Duration(max(p.MaxAttempts, 1)) * (p.SubmitTimeout + p.RetryCap + time.Second)
}

func deadLetter(ctx workflow.Context, in AnchorBatchInput, out AnchorBatchResult, cause error) (AnchorBatchResult, error) {
	// Keep the activity's own message, not the SDK's wrapping of it.
	msg := cause.Error()
	var appErr *temporal.ApplicationError
	if errors.As(cause, &appErr) {
		msg = appErr.Error()
	}
	var a *activities.Anchor
	if err := workflow.ExecuteActivity(ctx, a.DeadLetter, activities.DeadLetterInput{BatchID: in.BatchID, Error: msg}).Get(ctx, nil); err != nil {
		return out, err
	}
	setStatus(ctx, "dead_letter")
	out.Status, out.Error = "dead_letter", msg
	return out, temporal.NewNonRetryableApplicationError(fmt.Sprintf("batch %d on %s dead-lettered: %s", in.BatchID, in.Chain, msg), "DeadLetter", nil)
}

func setStatus(ctx workflow.Context, status string) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, SAStatus.ValueSet(status)); err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attribute", "error", err)
	}
}
