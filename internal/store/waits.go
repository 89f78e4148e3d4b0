package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Waits owns the finality waits (confirm_waits): one row per batch whose
// ConfirmAnchor attempt a worker's finality watcher completes, leased to
// that worker and adopted by another once the lease has passed.
type Waits struct{ *db }

// Wait is a batch whose ConfirmAnchor attempt is pending: the activity
// returned without a result, and a worker's finality watcher completes it
// when the batch's transaction is final, dropped or failed
// (docs/anchoring.md, "Waiting for finality").
type Wait struct {
	BatchID int64
	Chain   string
	// Ticket names this registration; a retried attempt registers again
	// under a new ticket, and a watcher deletes only the ticket it completed.
	Ticket string
	// TaskToken completes the attempt; nil for an attempt adopted after a
	// crash, completed by WorkflowID, RunID and ActivityID instead.
	TaskToken  []byte
	WorkflowID string
	RunID      string
	ActivityID string
	Attempt    int32
	Owner      string    // the watching worker process
	LeaseUntil time.Time // another watcher adopts the wait after this
	CreatedAt  time.Time
}

const waitColumns = `batch_id, chain, ticket, task_token, workflow_id, run_id, activity_id, attempt, owner, lease_until, created_at`

// RegisterWait records w, replacing an earlier registration for its batch.
func (s Waits) RegisterWait(ctx context.Context, w Wait) error {
	err := s.exec(ctx, `INSERT INTO confirm_waits (`+waitColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (batch_id) DO UPDATE SET chain = excluded.chain, ticket = excluded.ticket, task_token = excluded.task_token,
			workflow_id = excluded.workflow_id, run_id = excluded.run_id, activity_id = excluded.activity_id,
			attempt = excluded.attempt, owner = excluded.owner, lease_until = excluded.lease_until, created_at = excluded.created_at`,
		w.BatchID, w.Chain, w.Ticket, w.TaskToken, w.WorkflowID, w.RunID, w.ActivityID, w.Attempt, w.Owner, ms(w.LeaseUntil), ms(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("register wait of batch %d: %w", w.BatchID, err)
	}
	return nil
}

// DeleteWait removes the batch's wait if it is still the registration
// ticket names, and reports whether it did.
func (s Waits) DeleteWait(ctx context.Context, batchID int64, ticket string) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM confirm_waits WHERE batch_id = ? AND ticket = ?`, batchID, ticket)
	if err != nil {
		return false, fmt.Errorf("store: delete wait of batch %d: %w", batchID, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// RenewWaits extends the lease of every wait owner holds to until.
func (s Waits) RenewWaits(ctx context.Context, owner string, until time.Time) error {
	return s.exec(ctx, `UPDATE confirm_waits SET lease_until = ? WHERE owner = ?`, ms(until), owner)
}

// AdoptWaits gives owner, leased until until, every wait on chain whose
// lease ran out before now (its watcher stopped), and returns all the waits
// owner now holds on chain.
func (s Waits) AdoptWaits(ctx context.Context, owner, chain string, now, until time.Time) ([]Wait, error) {
	if err := s.exec(ctx, `UPDATE confirm_waits SET owner = ?, lease_until = ? WHERE chain = ? AND lease_until < ? AND owner <> ?`,
		owner, ms(until), chain, ms(now), owner); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+waitColumns+` FROM confirm_waits WHERE owner = ? AND chain = ? ORDER BY batch_id`, owner, chain)
	if err != nil {
		return nil, fmt.Errorf("store: waits of %s: %w", owner, err)
	}
	defer rows.Close()
	var out []Wait
	for rows.Next() {
		var (
			w                Wait
			lease, createdAt int64
		)
		if err := rows.Scan(&w.BatchID, &w.Chain, &w.Ticket, &w.TaskToken, &w.WorkflowID, &w.RunID, &w.ActivityID, &w.Attempt, &w.Owner, &lease, &createdAt); err != nil {
			return nil, err
		}
		w.LeaseUntil, w.CreatedAt = fromMS(lease), fromMS(createdAt)
		out = append(out, w)
	}
	return out, rows.Err()
}

// GetWait returns the batch's wait, or ErrNotFound.
func (s Waits) GetWait(ctx context.Context, batchID int64) (Wait, error) {
	var (
		w                Wait
		lease, createdAt int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT `+waitColumns+` FROM confirm_waits WHERE batch_id = ?`, batchID).
		Scan(&w.BatchID, &w.Chain, &w.Ticket, &w.TaskToken, &w.WorkflowID, &w.RunID, &w.ActivityID, &w.Attempt, &w.Owner, &lease, &createdAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Wait{}, ErrNotFound
	}
	if err != nil {
		return Wait{}, fmt.Errorf("store: wait of batch %d: %w", batchID, err)
	}
	w.LeaseUntil, w.CreatedAt = fromMS(lease), fromMS(createdAt)
	return w, nil
}

// UnwatchedSubmitted returns up to limit batches on chain that are submitted,
// were last updated before before, and have no wait: after a crash, a
// ConfirmAnchor attempt may have started without registering its wait.
// Oldest first.
func (s Waits) UnwatchedSubmitted(ctx context.Context, chain string, before time.Time, limit int) ([]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM batches b WHERE state = ? AND chain = ? AND updated_at < ?
		AND NOT EXISTS (SELECT 1 FROM confirm_waits w WHERE w.batch_id = b.id) ORDER BY updated_at LIMIT ?`,
		BatchSubmitted, chain, ms(before), limit)
	if err != nil {
		return nil, fmt.Errorf("store: unwatched batches on %s: %w", chain, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
