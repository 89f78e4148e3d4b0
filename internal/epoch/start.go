package epoch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// epochStart is how compute starts an epoch's workflow.
type epochStart struct {
	epoch   store.Epoch
	timeout time.Duration // the workflow's execution timeout
	restart bool          // replace a run Temporal has not timed out yet
}

// runEpoch is compute's work once the request is read: it stores the epoch,
// or decides what becomes of the one stored under its id, and makes sure its
// workflow runs. started says the workflow was started (or joined) and the
// answer is 202; otherwise e is answered as it is stored, with 200.
func (h *HTTP) runEpoch(ctx context.Context, req computeRequest) (e store.Epoch, started bool, aerr *httpapi.Error) {
	ne := req.epoch
	ne.Deadline = time.Now().Add(req.timeout)
	// The accept deadline runs from here: the body is read, and what is
	// left is keeper's own work and Temporal's acceptance.
	acceptTimeout := cmp.Or(h.Options.AcceptTimeout, DefaultAcceptTimeout)
	acceptCtx, cancel := context.WithTimeout(ctx, acceptTimeout)
	defer cancel()

	e, created, err := h.Store.CreateEpoch(ctx, ne, h.Options.MaxInFlight)
	if errors.Is(err, store.ErrBusy) {
		return e, false, h.busy(err)
	}
	if err != nil {
		return e, false, httpapi.Internal(h.Logger, "store epoch", err)
	}
	start := epochStart{epoch: e, timeout: req.timeout}
	if !created {
		var done bool
		if start, done, aerr = h.existingEpoch(ctx, e, ne, req.rerun, req.timeout); aerr != nil || done {
			return start.epoch, false, aerr
		}
	}
	if err := h.startEpoch(acceptCtx, start.epoch, start.timeout, start.restart); err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) { // its run completed between our read and the start
			if e, err = h.Store.GetEpoch(ctx, ne.ID); err == nil {
				return e, false, nil
			}
		}
		h.Logger.Warn("api: start epoch workflow", "epoch", ne.ID, "error", err)
		msg := "the epoch is queued but its workflow could not be started; send the same request again to start it"
		if acceptCtx.Err() != nil && ctx.Err() == nil {
			msg = fmt.Sprintf("the epoch is queued but Temporal did not accept its workflow within %s; send the same request again to start it (or join it, if Temporal took it meanwhile)", acceptTimeout)
		}
		return e, false, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "temporal_unavailable", RetryAfter: epochRetryAfter, Message: msg}
	}
	if e, err = h.Store.GetEpoch(ctx, ne.ID); err != nil {
		return e, false, httpapi.Internal(h.Logger, "load epoch", err)
	}
	return e, true, nil
}

// existingEpoch decides what a compute request does with the epoch e stored
// under its id already: done answers e as it is; otherwise its workflow is
// started (a queued or computing epoch's within its own deadline, a re-run's
// replacing the last run).
func (h *HTTP) existingEpoch(ctx context.Context, e store.Epoch, ne store.NewEpoch, rerun bool, timeout time.Duration) (start epochStart, done bool, aerr *httpapi.Error) {
	if e.RequestHash != ne.RequestHash {
		return epochStart{}, false, &httpapi.Error{Status: http.StatusConflict, Code: "epoch_conflict", Field: "id",
			Message: fmt.Sprintf("epoch %s exists with other inputs (request hash %s, this request's %s); an epoch's inputs never change", ne.ID, e.RequestHash, ne.RequestHash)}
	}
	switch e.Status {
	case store.EpochCompleted:
		if rerun {
			return epochStart{}, false, &httpapi.Error{Status: http.StatusConflict, Code: "epoch_completed", Field: "rerun",
				Message: fmt.Sprintf("epoch %s completed: every intent was acknowledged; a completed epoch never runs again", ne.ID)}
		}
		return epochStart{epoch: e}, true, nil
	case store.EpochQuarantined:
		// A quarantined epoch stays so, its intents not sent again,
		// until a re-run is asked for explicitly (?rerun=true).
		if !rerun {
			return epochStart{epoch: e}, true, nil
		}
		return h.restartEpoch(ctx, ne, timeout)
	case store.EpochFailed:
		return h.restartEpoch(ctx, ne, timeout)
	default: // queued or computing: make sure its workflow runs, within its own deadline
		return epochStart{epoch: e, timeout: time.Until(e.Deadline)}, false, nil
	}
}

// restartEpoch runs an ended epoch again. The same request again re-runs a
// failed epoch (a missed deadline, a source that was down for good), and
// ?rerun=true a quarantined one: intents are idempotent, so nothing is paid
// twice.
func (h *HTTP) restartEpoch(ctx context.Context, ne store.NewEpoch, timeout time.Duration) (start epochStart, done bool, aerr *httpapi.Error) {
	e, err := h.Store.RestartEpoch(ctx, ne.ID, ne.RequestHash, ne.Deadline, h.Options.MaxInFlight)
	switch {
	case errors.Is(err, store.ErrBusy):
		return epochStart{}, false, h.busy(err)
	case errors.Is(err, store.ErrConflict): // restarted meanwhile by another request
		if e, err = h.Store.GetEpoch(ctx, ne.ID); err != nil {
			return epochStart{}, false, httpapi.Internal(h.Logger, "load epoch", err)
		}
		return epochStart{epoch: e, timeout: timeout}, false, nil
	case err != nil:
		return epochStart{}, false, httpapi.Internal(h.Logger, "restart epoch", err)
	}
	return epochStart{epoch: e, timeout: timeout, restart: true}, false, nil
}

// busy counts and answers a compute refused for the epochs in flight.
func (h *HTTP) busy(err error) *httpapi.Error {
	if h.Busy != nil {
		h.Busy()
	}
	return &httpapi.Error{Status: http.StatusTooManyRequests, Code: "busy", RetryAfter: epochRetryAfter, Message: err.Error() + "; retry later"}
}

// startEpoch starts the epoch's workflow. The workflow id de-duplicates: a
// run in progress is used as it is, and a completed run is never started
// again (Temporal refuses; only a failed run may be followed by another). A
// restart, which the store decided (a failed epoch asked for again, a
// quarantined one re-run), replaces a run that Temporal has not timed out
// yet and follows any ended one: a quarantined epoch's run completed.
func (h *HTTP) startEpoch(ctx context.Context, e store.Epoch, timeout time.Duration, restart bool) error {
	conflict, reuse := enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	if restart {
		conflict, reuse = enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING, enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	opts := client.StartWorkflowOptions{
		ID:                       workflows.EpochWorkflowID(e.ID),
		TaskQueue:                workflows.EpochTaskQueue,
		WorkflowExecutionTimeout: timeout,
		WorkflowIDConflictPolicy: conflict,
		WorkflowIDReusePolicy:    reuse,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAStatus.ValueSet(store.EpochQueued)),
	}
	in := workflows.EpochInput{EpochID: e.ID, Run: e.Run, Policy: workflows.EpochPolicy{ActivityTimeout: timeout, Heartbeat: h.Options.Heartbeat}}
	_, err := h.Temporal.ExecuteWorkflow(ctx, opts, workflows.EpochCompute, in)
	return err
}
