// Package workflows holds keeper's workflow definitions: deterministic code
// only. Everything that touches the outside world is an activity. It also
// holds what workflows and activities agree on: the activities' registered
// names, their inputs and results, and the error types they fail with
// (the *_payloads.go files, errortypes.go). Workflows call activities by
// name, so this package links none of the activities' dependencies
// (internal/store, internal/chains, …); internal/worker registers each
// activity method under its name.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
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
	MaxAttempts    int32         // per step, before its batch is dead-lettered; 0: no limit, a transient failure is retried as long as it lasts (docs/retries.md, anchor)
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
	// RevisionOutlastOutages: a submit that still fails transiently after
	// its first LocalSubmitAttempts attempts (local activities) goes on as
	// an activity, after the schedule's delay, with no attempt limit unless
	// AnchorPolicy.MaxAttempts sets one. Temporal's server schedules an
	// activity's retries without adding events to the history, while each
	// local retry after a timer adds a marker, a timer and a workflow task:
	// a batch that waits out an outage of hours or days keeps a history of
	// a few dozen events (docs/retries.md, anchor).
	RevisionOutlastOutages = 2
	// AnchorRevision is the revision the dispatcher starts batches with.
	AnchorRevision = RevisionOutlastOutages
)

// LocalSubmitAttempts is how many attempts SubmitAnchor makes as a local
// activity on RevisionOutlastOutages before it goes on as an activity: on
// the default schedule both fit in the workflow task's timeout (the first
// retry waits 5 s), so they add no timer to the history.
const LocalSubmitAttempts = 2

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
// submitted again; a permanent failure, too many drops or (with
// AnchorPolicy.MaxAttempts set) exhausted retries dead-letter the batch's
// evidence and fail the workflow. A transient failure alone never does
// under the default policy (docs/retries.md, anchor).
func AnchorBatch(ctx workflow.Context, in AnchorBatchInput) (AnchorBatchResult, error) {
	ref := BatchRef{BatchID: in.BatchID, Chain: in.Chain}
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
	submit := func() workflow.Future { return workflow.ExecuteActivity(submitCtx, SubmitAnchorActivity, ref) }
	record := func(conf ConfirmResult) workflow.Future {
		return workflow.ExecuteActivity(recordCtx, RecordReceiptsActivity, ref, conf)
	}
	local := in.Revision >= RevisionLocalSteps
	// outlast, when set, goes on with a submit whose local attempts failed
	// transiently (RevisionOutlastOutages).
	var outlast func(localErr error, sub *SubmitResult) error
	if local {
		// A local activity's retries end at its schedule-to-close timeout,
		// which defaults to one attempt's timeout: give it the whole window
		// the activity's retry policy allows.
		localRetry, window := retry, retryWindow(in.Policy)
		if in.Revision >= RevisionOutlastOutages {
			localRetry, window, outlast = outlastSubmit(ctx, in, retry, prio)
		}
		submitLocal := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: window,
			StartToCloseTimeout:    in.Policy.SubmitTimeout,
			RetryPolicy:            localRetry,
		})
		recordLocal := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: recordWindow,
			StartToCloseTimeout:    in.Policy.SubmitTimeout,
			RetryPolicy:            recordRetry,
		})
		submit = func() workflow.Future { return workflow.ExecuteLocalActivity(submitLocal, SubmitAnchorActivity, ref) }
		record = func(conf ConfirmResult) workflow.Future {
			return workflow.ExecuteLocalActivity(recordLocal, RecordReceiptsActivity, ref, conf)
		}
	}

	var out AnchorBatchResult
	for {
		if !local {
			setStatus(ctx, "submitting")
		}
		var sub SubmitResult
		err := submit().Get(ctx, &sub)
		if err != nil && outlast != nil && transient(err) {
			err = outlast(err, &sub)
		}
		if err != nil {
			return deadLetter(recordCtx, in, out, err)
		}
		setStatus(ctx, "submitted")
		var conf ConfirmResult
		if err := workflow.ExecuteActivity(confirmCtx, ConfirmAnchorActivity, ref).Get(ctx, &conf); err != nil {
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
	return attemptsWindow(p, p.MaxAttempts)
}

// attemptsWindow bounds n attempts of a step under the policy.
func attemptsWindow(p AnchorPolicy, n int32) time.Duration {
	return time.Duration(max(n, 1)) * (p.SubmitTimeout + p.RetryCap + time.Second)
}

// outlastSubmit is RevisionOutlastOutages' submit: the retry policy and
// window of its local attempts (at most LocalSubmitAttempts), and, unless
// the policy's limit leaves no attempt after them, how the submit goes on
// as an activity numbering its attempts after the local ones. It reads the
// attempts recorded in the marker of the last local one and waits the
// delay that attempt asked for first, so the schedule goes on unchanged.
func outlastSubmit(ctx workflow.Context, in AnchorBatchInput, retry *temporal.RetryPolicy, prio temporal.Priority) (*temporal.RetryPolicy, time.Duration, func(error, *SubmitResult) error) {
	localAttempts := int32(LocalSubmitAttempts)
	if in.Policy.MaxAttempts > 0 {
		localAttempts = min(localAttempts, in.Policy.MaxAttempts)
	}
	localRetry := *retry
	localRetry.MaximumAttempts = localAttempts
	window := attemptsWindow(in.Policy, localAttempts)
	if in.Policy.MaxAttempts > 0 && in.Policy.MaxAttempts <= localAttempts {
		return &localRetry, window, nil
	}
	rest := *retry
	if in.Policy.MaxAttempts > 0 {
		rest.MaximumAttempts = in.Policy.MaxAttempts - localAttempts
	}
	actCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.SubmitTimeout,
		RetryPolicy:         &rest,
		Priority:            prio,
	})
	ref := BatchRef{BatchID: in.BatchID, Chain: in.Chain, PriorAttempts: localAttempts}
	return &localRetry, window, func(localErr error, sub *SubmitResult) error {
		delay := in.Policy.RetryBase << (localAttempts - 1)
		if delay <= 0 || delay > in.Policy.RetryCap {
			delay = in.Policy.RetryCap
		}
		var appErr *temporal.ApplicationError
		if errors.As(localErr, &appErr) && appErr.NextRetryDelay() > 0 {
			delay = appErr.NextRetryDelay()
		}
		log.With(workflow.GetLogger(ctx), "batch_id", in.BatchID, "chain", in.Chain).
			Warn("anchor submit still failing; retrying until it succeeds or fails for good", "attempts", localAttempts, "error", localErr)
		if err := workflow.Sleep(ctx, delay); err != nil {
			return err
		}
		return workflow.ExecuteActivity(actCtx, SubmitAnchorActivity, ref).Get(ctx, sub)
	}
}

// transient reports whether a step failed in a way more attempts may fix:
// a retryable error or a timeout, not a permanent error or a cancellation.
func transient(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable()
	}
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout)
}

func deadLetter(ctx workflow.Context, in AnchorBatchInput, out AnchorBatchResult, cause error) (AnchorBatchResult, error) {
	// Keep the activity's own message, not the SDK's wrapping of it.
	msg := cause.Error()
	var appErr *temporal.ApplicationError
	if errors.As(cause, &appErr) {
		msg = appErr.Error()
	}
	if err := workflow.ExecuteActivity(ctx, DeadLetterActivity, DeadLetterInput{BatchID: in.BatchID, Error: msg}).Get(ctx, nil); err != nil {
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
