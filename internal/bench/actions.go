package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Actions are the Temporal actions (what Temporal Cloud bills) that a set of
// workflows cost, read from their histories, plus the activity heartbeats
// that reached the server, which histories do not show.
type Actions struct {
	Workflows         int   `json:"workflows"`
	WorkflowStarts    int   `json:"workflow_starts"`
	ActivityAttempts  int   `json:"activity_attempts"`
	Timers            int   `json:"timers"`
	Signals           int   `json:"signals"`
	Updates           int   `json:"updates"`
	SearchAttrUpserts int   `json:"search_attribute_upserts"`
	Markers           int   `json:"markers"` // side effects, versions, local activities
	ChildWorkflows    int   `json:"child_workflows"`
	Heartbeats        int64 `json:"heartbeats"`
	Total             int64 `json:"total"`
}

func (a *Actions) add(b Actions) {
	a.Workflows += b.Workflows
	a.WorkflowStarts += b.WorkflowStarts
	a.ActivityAttempts += b.ActivityAttempts
	a.Timers += b.Timers
	a.Signals += b.Signals
	a.Updates += b.Updates
	a.SearchAttrUpserts += b.SearchAttrUpserts
	a.Markers += b.Markers
	a.ChildWorkflows += b.ChildWorkflows
}

func (a *Actions) total() {
	a.Total = int64(a.WorkflowStarts+a.ActivityAttempts+a.Timers+a.Signals+a.Updates+a.SearchAttrUpserts+a.Markers+a.ChildWorkflows) + a.Heartbeats
}

// historyActions counts the actions in one workflow's history.
func historyActions(ctx context.Context, c client.Client, workflowID string) (Actions, error) {
	a := Actions{Workflows: 1}
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return a, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			a.WorkflowStarts++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			// One started event per activity, carrying its last attempt:
			// every attempt before it was an action too.
			a.ActivityAttempts += int(max(ev.GetActivityTaskStartedEventAttributes().GetAttempt(), 1))
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			a.Timers++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
			a.Signals++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a.Updates++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			a.SearchAttrUpserts++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a.Markers++
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a.ChildWorkflows++
		}
	}
	return a, nil
}

// countActions sums the actions of the given workflows, reading up to eight
// histories at once.
func countActions(ctx context.Context, c client.Client, workflowIDs []string) (Actions, error) {
	var (
		sum  Actions
		mu   sync.Mutex
		next atomic.Int64
		errs = make(chan error, 8)
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(workflowIDs) {
					return
				}
				a, err := historyActions(ctx, c, workflowIDs[i])
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				sum.add(a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return sum, <-errs
}

// rpcCounter counts the Temporal RPCs this process's SDK client made, by
// operation (its metrics handler sees every request).
type rpcCounter struct {
	mu  sync.Mutex
	ops map[string]*atomic.Int64
}

func newRPCCounter() *rpcCounter { return &rpcCounter{ops: map[string]*atomic.Int64{}} }

func (c *rpcCounter) count(op string) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.ops[op]
	if !ok {
		n = new(atomic.Int64)
		c.ops[op] = n
	}
	return n
}

// get returns how many op requests were made.
func (c *rpcCounter) get(op string) int64 { return c.count(op).Load() }

// handler is the client.MetricsHandler to give the SDK client.
func (c *rpcCounter) handler() client.MetricsHandler { return rpcHandler{c: c} }

type rpcHandler struct {
	c  *rpcCounter
	op string
}

func (h rpcHandler) WithTags(tags map[string]string) client.MetricsHandler {
	if op, ok := tags["operation"]; ok {
		h.op = op
	}
	return h
}

func (h rpcHandler) Counter(name string) client.MetricsCounter {
	if name != "temporal_request" || h.op == "" {
		return client.MetricsNopHandler.Counter(name)
	}
	n := h.c.count(h.op)
	return counterFunc(func(d int64) { n.Add(d) })
}

func (h rpcHandler) Gauge(name string) client.MetricsGauge {
	return client.MetricsNopHandler.Gauge(name)
}
func (h rpcHandler) Timer(name string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer(name)
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }
