package temporalfake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/keeperhq/keeper/internal/temporalfake"
)

type input struct{ N int }

func SomeWorkflow(workflow.Context, input) error { return nil }

func TestTheFakeRecordsStartsByTheirRegisteredNameAndRefusesASecondStartOfARunningID(t *testing.T) {
	ctx := context.Background()
	c := &temporalfake.Client{}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w1", TaskQueue: "q"}, SomeWorkflow, input{1})
	require.NoError(t, err)
	assert.Equal(t, "w1", run.GetID())
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w2"}, "Named", input{2}, "extra")
	require.NoError(t, err)

	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w1"}, SomeWorkflow, input{3})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	require.ErrorAs(t, err, &already, "w1 still runs")
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w1", WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}, SomeWorkflow, input{4})
	require.NoError(t, err, "using the existing run is no conflict, and starts nothing")
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w1", WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING}, SomeWorkflow, input{5})
	require.NoError(t, err, "the running one is replaced")

	starts := c.Starts()
	require.Len(t, starts, 3)
	assert.Equal(t, "SomeWorkflow", starts[0].Workflow)
	assert.Equal(t, "q", starts[0].Options.TaskQueue)
	assert.Equal(t, "Named", starts[1].Workflow)
	assert.Equal(t, []any{input{2}, "extra"}, starts[1].Args)
	assert.Equal(t, []input{{1}, {2}, {5}}, temporalfake.Inputs[input](c))
	assert.Equal(t, 5, c.Calls())
}

func TestTheFakeFailsTheCallsItIsToldToInOrderThenAcceptsAgain(t *testing.T) {
	ctx := context.Background()
	c := &temporalfake.Client{}
	refused := errors.New("refused")
	c.FailNext(1)
	c.Fail(refused)
	_, err := c.SignalWithStartWorkflow(ctx, "w", "sig", 1, client.StartWorkflowOptions{}, "W")
	assert.ErrorIs(t, err, temporalfake.ErrDown)
	var unavailable *serviceerror.Unavailable
	assert.ErrorAs(t, err, &unavailable, "down is what the SDK reports for an unreachable frontend")
	_, err = c.SignalWithStartWorkflow(ctx, "w", "sig", 2, client.StartWorkflowOptions{}, "W")
	assert.ErrorIs(t, err, refused)
	_, err = c.SignalWithStartWorkflow(ctx, "w", "sig", 3, client.StartWorkflowOptions{}, "W", input{7})
	require.NoError(t, err)

	starts := c.Starts()
	require.Len(t, starts, 1, "refused calls start nothing")
	assert.Equal(t, temporalfake.Start{ID: "w", Options: client.StartWorkflowOptions{ID: "w"}, Workflow: "W", Args: []any{input{7}}, Signal: "sig", SignalArg: 3}, starts[0])
	assert.Equal(t, 3, c.Calls())
}

func TestTheFakeDescribesWhatItStartedAndNotFoundOtherwise(t *testing.T) {
	ctx := context.Background()
	c := &temporalfake.Client{}
	_, err := c.DescribeWorkflowExecution(ctx, "w", "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound)

	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w"}, "W")
	require.NoError(t, err)
	d, err := c.DescribeWorkflowExecution(ctx, "w", "")
	require.NoError(t, err)
	assert.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())

	c.SetStatus("w", enums.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	d, err = c.DescribeWorkflowExecution(ctx, "w", "")
	require.NoError(t, err)
	assert.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus())
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w"}, "W")
	require.NoError(t, err, "an ended workflow's id can start again")
	c.SetStatus("w", enums.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	onlyFailed := client.StartWorkflowOptions{ID: "w", WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY}
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	_, err = c.ExecuteWorkflow(ctx, onlyFailed, "W")
	require.ErrorAs(t, err, &already, "a completed run is not followed by another under ALLOW_DUPLICATE_FAILED_ONLY")
	c.SetStatus("w", enums.WORKFLOW_EXECUTION_STATUS_FAILED)
	_, err = c.ExecuteWorkflow(ctx, onlyFailed, "W")
	require.NoError(t, err, "a failed one is")

	c.Forget("w")
	_, err = c.DescribeWorkflowExecution(ctx, "w", "")
	require.ErrorAs(t, err, &notFound)
}

func TestAHeldFakeAnswersOnlyWhenTheCallersContextEnds(t *testing.T) {
	c := &temporalfake.Client{}
	c.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w"}, "W")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, c.Starts())
	assert.Equal(t, []bool{true}, c.Deadlines())
}
