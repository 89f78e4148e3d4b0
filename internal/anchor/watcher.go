package anchor

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Completer is the part of the Temporal client a Watcher uses.
type Completer interface {
	CompleteActivity(ctx context.Context, taskToken []byte, result any, err error) error
	CompleteActivityByID(ctx context.Context, namespace, workflowID, runID, activityID string, result any, err error) error
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// FinalityWaits is the store as a Watcher needs it: the waits of
// ConfirmAnchor attempts, under the lease of the watcher holding them, and
// the submitted batches none waits on (*store.Store).
type FinalityWaits interface {
	RegisterWait(ctx context.Context, w store.Wait) error
	GetWait(ctx context.Context, batchID int64) (store.Wait, error)
	DeleteWait(ctx context.Context, batchID int64, ticket string) (bool, error)
	RenewWaits(ctx context.Context, owner string, until time.Time) error
	AdoptWaits(ctx context.Context, owner, chain string, now, until time.Time) ([]store.Wait, error)
	UnwatchedSubmitted(ctx context.Context, chain string, before time.Time, limit int) ([]int64, error)
}

// Watcher is a worker's finality watcher. ConfirmAnchor records a wait in
// the store and returns without a result; the watcher follows the batch's
// transaction (one goroutine per batch, sharing the adapters' batched status
// pollers) and completes the attempt with exactly what a ConfirmAnchor that
// waited in its slot would have returned. No activity slot is held while a
// batch awaits finality.
//
// Waits survive the process: each watcher holds its waits under a lease it
// renews, and adopts the waits of a watcher whose lease ran out (a crashed
// or stopped worker). An attempt that started but died before it recorded
// its wait is found among submitted batches without one, through the
// workflow's pending activities, and completed by id. A wait nobody
// completes ends with its attempt's start-to-close timeout
// (KEEPER_CONFIRM_TIMEOUT), and the retry registers again.
type Watcher struct {
	Activities *Activities
	Temporal   Completer
	Namespace  string
	// WorkflowID names a batch's workflow (workflows.WorkflowID).
	WorkflowID func(chain string, batchID int64) string
	// Lease is how long a watcher's waits stay its own without renewal;
	// another watcher adopts them after that. Default 15s.
	Lease time.Duration

	owner string

	// completing bounds the completions in flight: a chain whose finality
	// resumes makes thousands of waits final at once, and handing them all
	// to the server at once would queue workflow tasks until they time out.
	completing chan struct{}

	mu      sync.Mutex
	watched map[int64]*watch    // batch → the registration being followed
	probed  map[int64]time.Time // batch → when it was last looked at for an orphaned attempt
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// watch is a registration being followed, and the span of the attempt that
// registered it (nil after a restart), under which its status lookups are
// traced.
type watch struct {
	store.Wait
	span trace.Span
}

// orphanAge is how long a submitted batch may go without a wait before the
// watcher looks for a ConfirmAnchor attempt that started and never
// registered one (its worker died in between).
const orphanAge = 30 * time.Second

// maxCompleting is how many attempts a watcher completes at once.
const maxCompleting = 16

// Start begins renewing, adopting and following waits; Stop ends it.
func (w *Watcher) Start() {
	w.Lease = cmp.Or(w.Lease, 15*time.Second)
	var id [8]byte
	_, _ = rand.Read(id[:])
	w.owner = hex.EncodeToString(id[:])
	w.watched = map[int64]*watch{}
	w.probed = map[int64]time.Time{}
	w.completing = make(chan struct{}, maxCompleting)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.wg.Add(1)
	go w.run()
}

// Stop stops following waits and lets their leases run out, so another
// watcher (or this worker's next start) adopts them.
func (w *Watcher) Stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.wg.Wait()
}

// register records the running ConfirmAnchor attempt's wait and follows it.
func (w *Watcher) register(ctx context.Context, in workflows.BatchRef, attempt int32) error {
	info := activity.GetInfo(ctx)
	now := time.Now()
	wt := store.Wait{
		BatchID: in.BatchID, Chain: in.Chain, TaskToken: info.TaskToken,
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, ActivityID: info.ActivityID,
		Attempt: attempt, Owner: w.owner, LeaseUntil: now.Add(w.Lease), CreatedAt: now,
	}
	wt.Ticket = ticket(wt)
	if err := w.Activities.Store.RegisterWait(ctx, wt); err != nil {
		return err
	}
	w.follow(watch{Wait: wt, span: trace.SpanFromContext(ctx)})
	return nil
}

func ticket(wt store.Wait) string {
	return fmt.Sprintf("%s/%s/%d", wt.RunID, wt.ActivityID, wt.Attempt)
}

// follow makes wt the registration followed for its batch, starting a
// goroutine for a batch not followed yet.
func (w *Watcher) follow(wt watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	if cur, ok := w.watched[wt.BatchID]; ok {
		*cur = wt
		return
	}
	w.watched[wt.BatchID] = &wt
	w.Activities.Metrics.waits(wt.Chain, 1)
	w.wg.Add(1)
	go w.await(wt.BatchID, wt.Chain)
}

// current is the registration followed for batch.
func (w *Watcher) current(batchID int64) watch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.watched[batchID]
}

// context is the watcher's context for wt: it carries the registering
// attempt's span (status lookups are traced under it) and its ids (log
// lines carry them, as an activity's do).
func (w *Watcher) context(wt watch) context.Context {
	ctx := context.WithValue(w.ctx, waitKey{}, wt.Wait)
	if wt.span != nil {
		ctx = trace.ContextWithSpan(ctx, wt.span)
	}
	return ctx
}

// await follows one batch until its current registration is completed.
func (w *Watcher) await(batchID int64, chain string) {
	defer w.wg.Done()
	in := workflows.BatchRef{BatchID: batchID, Chain: chain}
	for {
		j := &heldJournal{Journal: Journal(w.Activities.Store), batchID: batchID}
		res, err := w.Activities.confirm(w.context(w.current(batchID)), in, j, nil)
		if w.ctx.Err() != nil {
			return // stopping: the lease runs out and the wait is adopted
		}
		wt := w.current(batchID)
		res, err = w.Activities.settle(w.context(wt), in, wt.Attempt, res, err)
		if !w.complete(wt, res, err) {
			return
		}
		if w.done(wt) {
			return
		}
		// A retried attempt registered meanwhile: settle it too.
	}
}

// complete hands the outcome to the attempt, retrying while Temporal is
// unreachable. An attempt Temporal no longer knows (it timed out and was
// retried, or its workflow ended) counts as completed. It returns false
// when the watcher stops first.
func (w *Watcher) complete(wt watch, res workflows.ConfirmResult, err error) bool {
	var result any
	if err == nil {
		result = res
	}
	select {
	case w.completing <- struct{}{}:
		defer func() { <-w.completing }()
	case <-w.ctx.Done():
		return false
	}
	for delay := 500 * time.Millisecond; ; delay = min(2*delay, 30*time.Second) {
		var cerr error
		if wt.TaskToken != nil {
			cerr = w.Temporal.CompleteActivity(w.ctx, wt.TaskToken, result, err)
		} else {
			cerr = w.Temporal.CompleteActivityByID(w.ctx, w.Namespace, wt.WorkflowID, wt.RunID, wt.ActivityID, result, err)
		}
		var gone *serviceerror.NotFound
		if cerr == nil || errors.As(cerr, &gone) {
			return true
		}
		w.Activities.log(w.context(wt), workflows.BatchRef{BatchID: wt.BatchID, Chain: wt.Chain}).Warn("completing ConfirmAnchor failed; trying again", "error", cerr, "in", delay.String())
		select {
		case <-w.ctx.Done():
			return false
		case <-time.After(delay):
		}
	}
}

// done forgets the batch's wait once wt, the registration completed, is
// still the one followed; false means a newer one arrived meanwhile.
func (w *Watcher) done(wt watch) bool {
	w.mu.Lock()
	if w.watched[wt.BatchID].Ticket != wt.Ticket {
		w.mu.Unlock()
		return false
	}
	delete(w.watched, wt.BatchID)
	w.mu.Unlock()
	w.Activities.Metrics.waits(wt.Chain, -1)
	if _, err := w.Activities.Store.DeleteWait(w.ctx, wt.BatchID, wt.Ticket); err != nil {
		// The next watcher to hold it completes it again and finds it gone.
		w.Activities.log(w.context(wt), workflows.BatchRef{BatchID: wt.BatchID, Chain: wt.Chain}).Warn("delete wait", "error", err)
	}
	return true
}

// run renews the watcher's leases, adopts lapsed waits and looks for
// orphaned attempts until Stop.
func (w *Watcher) run() {
	defer w.wg.Done()
	w.tend() // a restarted worker takes up its predecessor's lapsed waits at once
	renew := time.NewTicker(w.Lease / 3)
	defer renew.Stop()
	orphans := time.NewTicker(orphanAge / 2)
	defer orphans.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-renew.C:
			w.tend()
		case <-orphans.C:
			w.findOrphans()
		}
	}
}

// tend renews this watcher's leases and follows every wait it holds,
// adopting those whose lease ran out.
func (w *Watcher) tend() {
	now := time.Now()
	log := w.Activities.Logger
	if err := w.Activities.Store.RenewWaits(w.ctx, w.owner, now.Add(w.Lease)); err != nil && w.ctx.Err() == nil {
		log.Warn("renew finality waits", "error", err)
	}
	for chain := range w.Activities.Chains {
		held, err := w.Activities.Store.AdoptWaits(w.ctx, w.owner, chain, now, now.Add(w.Lease))
		if err != nil {
			if w.ctx.Err() == nil {
				log.Warn("adopt finality waits", "chain", chain, "error", err)
			}
			continue
		}
		for _, wt := range held {
			w.mu.Lock()
			cur, ok := w.watched[wt.BatchID]
			same := ok && cur.Ticket == wt.Ticket
			w.mu.Unlock()
			if !same {
				w.follow(watch{Wait: wt})
			}
		}
	}
}

// findOrphans registers waits for ConfirmAnchor attempts that started and
// never recorded one: their worker died between taking the task and writing
// the wait. Without this they would sit until their start-to-close timeout.
func (w *Watcher) findOrphans() {
	now := time.Now()
	for chain := range w.Activities.Chains {
		ids, err := w.Activities.Store.UnwatchedSubmitted(w.ctx, chain, now.Add(-orphanAge), 50)
		if err != nil {
			if w.ctx.Err() == nil {
				w.Activities.Logger.Warn("look for orphaned finality waits", "chain", chain, "error", err)
			}
			continue
		}
		probes := 0
		for _, id := range ids {
			if at, ok := w.probed[id]; ok && now.Sub(at) < 4*orphanAge {
				continue
			}
			w.probed[id] = now
			if probes++; probes > 10 {
				break
			}
			w.adoptOrphan(chain, id, now)
		}
	}
	for id, at := range w.probed {
		if now.Sub(at) > 8*orphanAge {
			delete(w.probed, id)
		}
	}
}

func (w *Watcher) adoptOrphan(chain string, batchID int64, now time.Time) {
	wfID := w.WorkflowID(chain, batchID)
	desc, err := w.Temporal.DescribeWorkflowExecution(w.ctx, wfID, "")
	if err != nil {
		return // not started yet, or Temporal unreachable: looked at again later
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != "ConfirmAnchor" || pa.GetState() != enums.PENDING_ACTIVITY_STATE_STARTED ||
			now.Sub(pa.GetLastStartedTime().AsTime()) < orphanAge {
			continue
		}
		if _, err := w.Activities.Store.GetWait(w.ctx, batchID); !errors.Is(err, store.ErrNotFound) {
			return // registered meanwhile (or the store is unreachable)
		}
		wt := store.Wait{
			BatchID: batchID, Chain: chain, WorkflowID: wfID, RunID: desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(),
			ActivityID: pa.GetActivityId(), Attempt: pa.GetAttempt(), Owner: w.owner, LeaseUntil: now.Add(w.Lease), CreatedAt: now,
		}
		wt.Ticket = ticket(wt)
		if err := w.Activities.Store.RegisterWait(w.ctx, wt); err != nil {
			return
		}
		w.Activities.Metrics.orphan(chain)
		w.Activities.log(w.context(watch{Wait: wt}), workflows.BatchRef{BatchID: batchID, Chain: chain}).Warn("ConfirmAnchor attempt started without recording its wait (its worker stopped); following it", "activity_id", wt.ActivityID, "attempt", wt.Attempt)
		w.follow(watch{Wait: wt})
	}
}
