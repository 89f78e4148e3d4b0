package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// CadencePath is where a rate's intake → confirmed went, step by step,
// along each evidence's last anchor to become final (the one whose chain's
// finality it waited for). For one evidence the steps add up to its
// intake → confirmed; their p99s need not.
type CadencePath struct {
	Evidence            int     `json:"evidence"`              // confirmed evidence whose every step was dated
	IntakeToFormed      Latency `json:"intake_to_formed"`      // its batch formed: the dispatcher and the anchor interval
	FormedToJournaled   Latency `json:"formed_to_journaled"`   // the workflow started and its transaction was journaled, just before broadcast
	JournaledToIncluded Latency `json:"journaled_to_included"` // the block (slot) holding it appeared: the chain's block time
	IncludedToFinal     Latency `json:"included_to_final"`     // the block making it final appeared: the chain's finality
	FinalToCompleted    Latency `json:"final_to_completed"`    // keeper saw it final and completed ConfirmAnchor (the history's event time)
	CompletedToTask     Latency `json:"completed_to_task"`     // the workflow task that takes the result started on a worker
	TaskToRecorded      Latency `json:"task_to_recorded"`      // RecordReceipts stored the batch's confirmation
	RecordedToConfirmed Latency `json:"recorded_to_confirmed"` // its evidence was confirmed (its other chains' batches)
}

// confirmed is where a batch was confirmed, and when each step of its
// confirmation happened.
type confirmed struct {
	block     uint64    // the block (slot) its transaction is in
	recorded  time.Time // RecordReceipts stored it (the batch's updated_at)
	completed time.Time // ConfirmAnchor completed (Temporal's history)
	task      time.Time // the workflow task after it started
}

// confirmedBatches reads, for the confirmed batches of bs, the block each
// is in and when keeper's store recorded it (straight from the store: it
// has no method for these), and from each workflow's history when its
// ConfirmAnchor completed.
func (s *stack) confirmedBatches(ctx context.Context, bs []store.BatchTiming) (map[int64]*confirmed, error) {
	out := map[int64]*confirmed{}
	if len(bs) == 0 {
		return out, nil
	}
	db, postgres, err := s.logDB()
	if err != nil {
		return nil, err
	}
	lo, hi := bs[0].ID, bs[0].ID
	for _, b := range bs {
		lo, hi = min(lo, b.ID), max(hi, b.ID)
	}
	q := `SELECT id, COALESCE(block, 0), updated_at FROM batches WHERE id >= ? AND id <= ? AND state = ?`
	if postgres {
		q = `SELECT id, COALESCE(block, 0), updated_at FROM batches WHERE id >= $1 AND id <= $2 AND state = $3`
	}
	rows, err := db.QueryContext(ctx, q, lo, hi, store.BatchConfirmed)
	if err != nil {
		return nil, fmt.Errorf("bench: confirmed batches: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, block, upd int64
		)
		if err := rows.Scan(&id, &block, &upd); err != nil {
			return nil, fmt.Errorf("bench: confirmed batches: %w", err)
		}
		out[id] = &confirmed{block: uint64(block), recorded: time.UnixMilli(upd)}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, s.confirmEvents(ctx, bs, out)
}

// confirmEvents fills in, from each confirmed batch's history, when its
// last ConfirmAnchor completed and the workflow task after it started,
// reading up to eight histories at once.
func (s *stack) confirmEvents(ctx context.Context, bs []store.BatchTiming, cs map[int64]*confirmed) error {
	var todo []store.BatchTiming
	for _, b := range bs {
		if cs[b.ID] != nil {
			todo = append(todo, b)
		}
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, 8)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				c := cs[todo[i].ID]
				var err error
				if c.completed, c.task, err = confirmTimes(ctx, s.client, workflows.WorkflowID(todo[i].Chain, todo[i].ID)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// confirmTimes reads from a workflow's history when its last ConfirmAnchor
// completed and when the workflow task after it started.
func confirmTimes(ctx context.Context, c client.Client, workflowID string) (completed, task time.Time, err error) {
	confirms := map[int64]bool{} // scheduled event ids of ConfirmAnchor
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == workflows.ConfirmAnchorActivity {
				confirms[ev.GetEventId()] = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if confirms[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] {
				completed, task = ev.GetEventTime().AsTime(), time.Time{}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			if !completed.IsZero() && task.IsZero() {
				task = ev.GetEventTime().AsTime()
			}
		}
	}
	return completed, task, nil
}

// step is one evidence's path to confirmation along its last anchor to
// become final.
type step struct {
	due, formed, journaled, included, final, completed, task, recorded, confirmed time.Time
}

// pathOf is e's path, false when a step of it is not known (it is not
// confirmed, or a chain of it was not watched).
func pathOf(e store.EvidenceTiming, due time.Time, byID map[int64]store.BatchTiming, cs map[int64]*confirmed, w *blockWatch) (step, bool) {
	if e.Status != store.StatusConfirmed || len(e.Batches) == 0 {
		return step{}, false
	}
	var p step
	for _, id := range e.Batches {
		b, c := byID[id], cs[id]
		if c == nil {
			return step{}, false
		}
		fin, ok := w.final(b.Chain, c.block)
		inc, ok2 := w.included(b.Chain, c.block)
		if !ok || !ok2 || c.completed.IsZero() || c.task.IsZero() || b.FirstTx.IsZero() {
			return step{}, false
		}
		if fin.After(p.final) {
			p = step{formed: b.CreatedAt, journaled: b.FirstTx, included: inc, final: fin, completed: c.completed, task: c.task, recorded: c.recorded}
		}
	}
	p.due, p.confirmed = due, e.UpdatedAt
	return p, true
}

// cadencePath lines up the steps of every confirmed evidence of the rate
// along its last anchor to become final: the time from the block that made
// it final to its confirmation, and the whole path.
func cadencePath(evs []store.EvidenceTiming, bs []store.BatchTiming, due map[string]time.Time, cs map[int64]*confirmed, w *blockWatch) (Latency, CadencePath) {
	byID := map[int64]store.BatchTiming{}
	for _, b := range bs {
		byID[b.ID] = b
	}
	var ds [8][]time.Duration
	var toConfirmed []time.Duration
	for _, e := range evs {
		d, ok := due[e.ID]
		if !ok {
			continue
		}
		p, ok := pathOf(e, d, byID, cs, w)
		if !ok {
			continue
		}
		at := []time.Time{p.due, p.formed, p.journaled, p.included, p.final, p.completed, p.task, p.recorded, p.confirmed}
		for i := range ds {
			ds[i] = append(ds[i], at[i+1].Sub(at[i]))
		}
		toConfirmed = append(toConfirmed, p.confirmed.Sub(p.final))
	}
	path := CadencePath{
		Evidence: len(toConfirmed), IntakeToFormed: summarize(ds[0]), FormedToJournaled: summarize(ds[1]), JournaledToIncluded: summarize(ds[2]),
		IncludedToFinal: summarize(ds[3]), FinalToCompleted: summarize(ds[4]), CompletedToTask: summarize(ds[5]), TaskToRecorded: summarize(ds[6]),
		RecordedToConfirmed: summarize(ds[7]),
	}
	return summarize(toConfirmed), path
}
