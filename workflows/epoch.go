package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keeperhq/keeper/activities"
)

// EpochTaskQueue is the task queue of reward-epoch workflows and activities.
// It is apart from anchoring so that a million-account epoch never holds up
// the activity slots that anchor evidence, and so epoch workers can be scaled
// on their own.
const EpochTaskQueue = "keeper-epoch"

// EpochPolicy carries the epoch's timeouts into the workflow, fixed for the
// life of a run and visible in its history.
type EpochPolicy struct {
	ActivityTimeout time.Duration // one attempt of one step; the epoch's execution timeout bounds them all
	Heartbeat       time.Duration // a step whose worker stops heartbeating is retried elsewhere after this long
}

// EpochInput identifies the epoch's run: ids only, never usage or payouts.
type EpochInput struct {
	EpochID string
	Run     int
	Policy  EpochPolicy
}

// EpochResult is a run's outcome: hashes and counts only.
type EpochResult struct {
	Status     string // completed | quarantined
	Reason     string
	InputsHash string
	Accounts   int
	TotalPaid  string
	Commitment string
	Intents    int
	EvidenceID string
}

// epochComputing is the workflow's status while a run works; its outcomes
// are activities.EpochCompleted, EpochQuarantined and EpochFailed.
const epochComputing = "computing"

// EpochWorkflowID is the id of an epoch's workflow; it de-duplicates starts.
func EpochWorkflowID(epoch string) string { return "epoch-" + epoch }

// EpochCompute runs one reward epoch: seal the inputs, split the pool with
// the conservation check, write run.json and the commitment, emit the
// settlement intents, and hand the commitment to intake for anchoring.
// Inputs or payouts that fail a check quarantine the epoch: it completes with
// status quarantined and emits no intents. Any other step that fails for
// good fails the epoch with the step's error.
func EpochCompute(ctx workflow.Context, in EpochInput) (EpochResult, error) {
	var a *activities.Epoch
	ref := activities.EpochRef{EpochID: in.EpochID, Run: in.Run}
	stepCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.ActivityTimeout,
		HeartbeatTimeout:    in.Policy.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeQuarantine, activities.ErrTypePermanent},
		},
	})
	finishCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})

	setStatus(ctx, epochComputing)
	var seal activities.SealResult
	if err := workflow.ExecuteActivity(stepCtx, a.SealInputs, ref).Get(ctx, &seal); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out := EpochResult{InputsHash: seal.InputsHash, Accounts: seal.Accounts}

	var payouts activities.ComputeResult
	if err := workflow.ExecuteActivity(stepCtx, a.ComputeRewards, ref, seal).Get(ctx, &payouts); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeQuarantine {
			return quarantine(finishCtx, ref, out, appErr.Message())
		}
		return failEpoch(finishCtx, ref, err)
	}
	out.TotalPaid = payouts.TotalPaid

	var art activities.ArtifactsResult
	if err := workflow.ExecuteActivity(stepCtx, a.WriteArtifacts, ref, activities.ArtifactsInput{Inputs: seal, Payouts: payouts}).Get(ctx, &art); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out.Commitment = art.Commitment

	var sent activities.IntentsResult
	if err := workflow.ExecuteActivity(stepCtx, a.EmitIntents, ref, payouts).Get(ctx, &sent); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out.Intents = sent.Acknowledged

	var anchor activities.AnchorResult
	if err := workflow.ExecuteActivity(stepCtx, a.AnchorCommitment, ref, art).Get(ctx, &anchor); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out.EvidenceID = anchor.EvidenceID

	if err := workflow.ExecuteActivity(finishCtx, a.FinishEpoch, ref, activities.EpochOutcome{Status: activities.EpochCompleted}).Get(ctx, nil); err != nil {
		return out, err
	}
	setStatus(ctx, activities.EpochCompleted)
	out.Status = activities.EpochCompleted
	return out, nil
}

func quarantine(ctx workflow.Context, ref activities.EpochRef, out EpochResult, reason string) (EpochResult, error) {
	var a *activities.Epoch
	if err := workflow.ExecuteActivity(ctx, a.FinishEpoch, ref, activities.EpochOutcome{Status: activities.EpochQuarantined, Reason: reason}).Get(ctx, nil); err != nil {
		return out, err
	}
	workflow.GetLogger(ctx).Warn("epoch quarantined", "epoch", ref.EpochID, "reason", reason)
	setStatus(ctx, activities.EpochQuarantined)
	out.Status, out.Reason = activities.EpochQuarantined, reason
	return out, nil
}

func failEpoch(ctx workflow.Context, ref activities.EpochRef, cause error) (EpochResult, error) {
	// Keep the activity's own message, not the SDK's wrapping of it.
	msg := cause.Error()
	var appErr *temporal.ApplicationError
	if errors.As(cause, &appErr) {
		msg = appErr.Message()
	}
	var a *activities.Epoch
	if err := workflow.ExecuteActivity(ctx, a.FinishEpoch, ref, activities.EpochOutcome{Status: activities.EpochFailed, Reason: msg}).Get(ctx, nil); err != nil {
		return EpochResult{}, err
	}
	setStatus(ctx, activities.EpochFailed)
	return EpochResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("epoch %s failed: %s", ref.EpochID, msg), "EpochFailed", nil)
}
