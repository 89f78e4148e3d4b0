// Package temporalfake is the one Temporal double of keeper's tests: a
// frontend that records the workflows it is asked to start or signal,
// answers DescribeWorkflowExecution from what it started, refuses calls on
// demand and can hang as an overloaded cluster does. It speaks the SDK's
// types and errors (serviceerror), so the code under test handles it as it
// handles a real server.
//
// Tests that need workflows to run use the SDK's testsuite or the embedded
// server instead; this fake only stands in for the client calls keeper's
// dispatchers and API make.
package temporalfake

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// ErrDown is what a refused call returns when Fail was given no error: a
// Temporal that cannot be reached.
var ErrDown = serviceerror.NewUnavailable("temporalfake: temporal is down")

// Start is one workflow the fake accepted: started, or signalled with
// signal-with-start.
type Start struct {
	ID       string
	Options  client.StartWorkflowOptions
	Workflow string // the workflow type's name, as the SDK registers it
	Args     []any
	// Signal and SignalArg are the signal of a signal-with-start ("" for
	// a plain start).
	Signal    string
	SignalArg any
}

// Input is the start's first argument (nil without one).
func (s Start) Input() any {
	if len(s.Args) == 0 {
		return nil
	}
	return s.Args[0]
}

// Client is a fake Temporal frontend. The zero value accepts every call; it
// is safe for concurrent use.
type Client struct {
	mu       sync.Mutex
	starts   []Start
	status   map[string]enums.WorkflowExecutionStatus // by workflow id
	failures []error
	hold     bool
	calls    int
	deadline []bool
}

// Fail makes the next calls fail, one per error, in order: a nil error
// stands for ErrDown.
func (c *Client) Fail(errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, err := range errs {
		if err == nil {
			err = ErrDown
		}
		c.failures = append(c.failures, err)
	}
}

// FailNext makes the next n calls fail with ErrDown.
func (c *Client) FailNext(n int) { c.Fail(make([]error, n)...) }

// Hold makes every later call hang until its context ends, as a frontend
// that takes calls and never answers them does.
func (c *Client) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = true
}

// Starts lists what the fake accepted, in order.
func (c *Client) Starts() []Start {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Start(nil), c.starts...)
}

// Calls is how many calls the fake was made, refused ones included.
func (c *Client) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Deadlines tells, per call in order, whether its context had a deadline.
func (c *Client) Deadlines() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.deadline...)
}

// Inputs lists the first arguments of the accepted starts that are a T.
func Inputs[T any](c *Client) []T {
	var out []T
	for _, s := range c.Starts() {
		if in, ok := s.Input().(T); ok {
			out = append(out, in)
		}
	}
	return out
}

// SetStatus says how the workflow with this id stands from now on, as
// DescribeWorkflowExecution answers it: a started workflow runs until
// told otherwise.
func (c *Client) SetStatus(workflowID string, status enums.WorkflowExecutionStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == nil {
		c.status = map[string]enums.WorkflowExecutionStatus{}
	}
	c.status[workflowID] = status
}

// Forget makes the fake answer NotFound for the workflow, as a server does
// once its history is gone (retention, or a workflow never started).
func (c *Client) Forget(workflowID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.status, workflowID)
}

// ExecuteWorkflow starts a workflow, under the options' id policies as the
// server applies them: for an id that runs, the conflict policy (use the
// run, terminate it and start anew, or by default refuse with
// WorkflowExecutionAlreadyStarted); for an id whose run ended, the reuse
// policy (by default another run; after a failed run only; never).
func (c *Client) ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	if err := c.call(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	status, seen := c.status[options.ID]
	if seen {
		start, err := admits(options, status)
		if err != nil || !start {
			return run{id: options.ID}, err
		}
	}
	c.accept(Start{ID: options.ID, Options: options, Workflow: name(workflow), Args: args})
	return run{id: options.ID}, nil
}

// admits tells whether a start of an id whose last run stands at status
// begins a new run (false with no error: the running one is used).
func admits(o client.StartWorkflowOptions, status enums.WorkflowExecutionStatus) (bool, error) {
	refused := serviceerror.NewWorkflowExecutionAlreadyStarted("temporalfake: workflow "+o.ID+" "+status.String(), "", "")
	if status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		switch o.WorkflowIDConflictPolicy {
		case enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING:
			return false, nil
		case enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING:
			return true, nil
		}
		return false, refused
	}
	switch o.WorkflowIDReusePolicy {
	case enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
		return false, refused
	case enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY:
		if status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			return false, refused
		}
	}
	return true, nil
}

// SignalWithStartWorkflow signals a workflow, starting it first when it
// is not running.
func (c *Client) SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
	options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	if err := c.call(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	options.ID = workflowID
	c.accept(Start{ID: workflowID, Options: options, Workflow: name(workflow), Args: args, Signal: signalName, SignalArg: signalArg})
	return run{id: workflowID}, nil
}

// DescribeWorkflowExecution answers with the workflow's status, or
// NotFound for a workflow the fake never started (or was told to forget).
func (c *Client) DescribeWorkflowExecution(ctx context.Context, workflowID, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if err := c.call(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	status, ok := c.status[workflowID]
	if !ok {
		return nil, serviceerror.NewNotFound("temporalfake: workflow not found for ID: " + workflowID)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: status},
	}, nil
}

// call counts a call and refuses it when a failure is queued, or hangs
// until ctx ends while held.
func (c *Client) call(ctx context.Context) error {
	c.mu.Lock()
	c.calls++
	_, hasDeadline := ctx.Deadline()
	c.deadline = append(c.deadline, hasDeadline)
	hold := c.hold
	var err error
	if len(c.failures) > 0 {
		err, c.failures = c.failures[0], c.failures[1:]
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if hold {
		<-ctx.Done()
		return ctx.Err()
	}
	return ctx.Err()
}

// accept records a start; c.mu is held.
func (c *Client) accept(s Start) {
	c.starts = append(c.starts, s)
	if c.status == nil {
		c.status = map[string]enums.WorkflowExecutionStatus{}
	}
	c.status[s.ID] = enums.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// name is a workflow type's name as the SDK registers it: the string, or
// the function's name without its package.
func name(workflow any) string {
	if s, ok := workflow.(string); ok {
		return s
	}
	v := reflect.ValueOf(workflow)
	if v.Kind() != reflect.Func {
		return ""
	}
	full := runtime.FuncForPC(v.Pointer()).Name()
	full = strings.TrimSuffix(full, "-fm")
	return full[strings.LastIndex(full, ".")+1:]
}

// run is the handle of a started workflow; the fake runs nothing, so
// waiting on it fails.
type run struct{ id string }

func (r run) GetID() string    { return r.id }
func (r run) GetRunID() string { return "temporalfake-run" }

func (r run) GetFirstExecutionRunID() string { return r.GetRunID() }
func (r run) Get(context.Context, any) error {
	return errors.New("temporalfake: workflows do not run in the fake")
}
func (r run) GetWithOptions(ctx context.Context, v any, _ client.WorkflowRunGetOptions) error {
	return r.Get(ctx, v)
}
