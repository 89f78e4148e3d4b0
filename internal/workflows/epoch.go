package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
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
// are EpochCompleted, EpochQuarantined and EpochFailed.
const epochComputing = "computing"

// EpochWorkflowID is the id of an epoch's workflow; it de-duplicates starts.
func EpochWorkflowID(epoch string) string { return "epoch-" + epoch }

// EpochCompute runs one reward epoch: seal the inputs, split the pool with
// the conservation check, write run.json and the commitment, emit the
// settlement intents, and hand the commitment to intake for anchoring.
// Inputs or payouts that fail a check quarantine the epoch: it completes with
// status quarantined and emits no intents. Intents that cannot all be
// delivered (a ledger refusal, or a ledger down until the deadline's
// reserve) quarantine it too, with what was acknowledged so far recorded;
// only an explicit re-run sends them again. Any other step that fails for
// good fails the epoch with the step's error.
func EpochCompute(ctx workflow.Context, in EpochInput) (EpochResult, error) {
	ref := EpochRef{EpochID: in.EpochID, Run: in.Run}
	stepCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Policy.ActivityTimeout,
		HeartbeatTimeout:    in.Policy.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{ErrTypeQuarantine, ErrTypePermanent},
		},
	})
	finishCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})

	setStatus(ctx, epochComputing)
	var seal SealResult
	if err := workflow.ExecuteActivity(stepCtx, SealInputsActivity, ref).Get(ctx, &seal); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out := EpochResult{InputsHash: seal.InputsHash, Accounts: seal.Accounts}

	var payouts ComputeResult
	if err := workflow.ExecuteActivity(stepCtx, ComputeRewardsActivity, ref, seal).Get(ctx, &payouts); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeQuarantine {
			return quarantine(finishCtx, ref, out, appErr.Message())
		}
		return failEpoch(finishCtx, ref, err)
	}
	out.TotalPaid = payouts.TotalPaid

	var art ArtifactsResult
	if err := workflow.ExecuteActivity(stepCtx, WriteArtifactsActivity, ref, ArtifactsInput{Inputs: seal, Payouts: payouts}).Get(ctx, &art); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out.Commitment = art.Commitment

	// Version 1 (docs/epochs.md, intents): intents that cannot all be
	// delivered quarantine the epoch instead of failing it, so no intent is
	// sent again until someone asks for a re-run; and the step gives up in
	// time for that to be recorded before the epoch's deadline.
	intentsVersion := workflow.GetVersion(ctx, intentsQuarantineChange, workflow.DefaultVersion, 1)
	intentsCtx := stepCtx
	if left := intentsBudget(ctx); intentsVersion >= 1 && left > 0 {
		intentsCtx = workflow.WithScheduleToCloseTimeout(stepCtx, left)
	}
	var sent IntentsResult
	if err := workflow.ExecuteActivity(intentsCtx, EmitIntentsActivity, ref, payouts).Get(ctx, &sent); err != nil {
		if intentsVersion >= 1 {
			return quarantine(finishCtx, ref, out, IntentsQuarantinePrefix+failureMessage(err))
		}
		return failEpoch(finishCtx, ref, err)
	}
	out.Intents = sent.Acknowledged

	var anchor AnchorResult
	if err := workflow.ExecuteActivity(stepCtx, AnchorCommitmentActivity, ref, art).Get(ctx, &anchor); err != nil {
		return failEpoch(finishCtx, ref, err)
	}
	out.EvidenceID = anchor.EvidenceID

	if err := workflow.ExecuteActivity(finishCtx, FinishEpochActivity, ref, EpochOutcome{Status: EpochCompleted}).Get(ctx, nil); err != nil {
		return out, err
	}
	setStatus(ctx, EpochCompleted)
	out.Status = EpochCompleted
	return out, nil
}

func quarantine(ctx workflow.Context, ref EpochRef, out EpochResult, reason string) (EpochResult, error) {
	if err := workflow.ExecuteActivity(ctx, FinishEpochActivity, ref, EpochOutcome{Status: EpochQuarantined, Reason: reason}).Get(ctx, nil); err != nil {
		return out, err
	}
	workflow.GetLogger(ctx).Warn("epoch quarantined", "epoch", ref.EpochID, "reason", reason)
	setStatus(ctx, EpochQuarantined)
	out.Status, out.Reason = EpochQuarantined, reason
	return out, nil
}

// intentsQuarantineChange is the workflow.GetVersion change id of the
// intents step's quarantine.
const intentsQuarantineChange = "intents-failure-quarantines"

// IntentsQuarantinePrefix starts the reason of an epoch quarantined because
// its intents could not all be delivered.
const IntentsQuarantinePrefix = "intents not delivered: "

// intentsBudget is how long the intents step may keep retrying: until the
// epoch's deadline (its execution timeout) less a reserve for recording the
// quarantine. Zero when the run has no deadline or too little is left.
func intentsBudget(ctx workflow.Context) time.Duration {
	info := workflow.GetInfo(ctx)
	total := info.WorkflowExecutionTimeout
	if total <= 0 {
		return 0
	}
	reserve := min(time.Minute, total/10)
	return info.WorkflowStartTime.Add(total).Sub(workflow.Now(ctx)) - reserve
}

// failureMessage is an activity's own message, not the SDK's wrapping of it.
func failureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

func failEpoch(ctx workflow.Context, ref EpochRef, cause error) (EpochResult, error) {
	msg := failureMessage(cause)
	if err := workflow.ExecuteActivity(ctx, FinishEpochActivity, ref, EpochOutcome{Status: EpochFailed, Reason: msg}).Get(ctx, nil); err != nil {
		return EpochResult{}, err
	}
	setStatus(ctx, EpochFailed)
	return EpochResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("epoch %s failed: %s", ref.EpochID, msg), "EpochFailed", nil)
}
