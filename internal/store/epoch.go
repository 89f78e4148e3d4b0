package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Epochs owns reward epochs (epochs): one row per epoch with its request,
// where each step's artifacts are and how far it got; and the built-in
// ledger's settlement intents (ledger_intents, ledger.go).
type Epochs struct{ *db }

// Epoch statuses. queued and computing are "in flight"; the others are final.
const (
	EpochQueued      = "queued"
	EpochComputing   = "computing"
	EpochQuarantined = "quarantined"
	EpochCompleted   = "completed"
	EpochFailed      = "failed"
)

// ErrBusy is returned when the number of epochs in flight is at its limit.
var ErrBusy = errors.New("too many epochs in flight")

// NewEpoch is a compute request as the API accepted it.
type NewEpoch struct {
	ID          string
	RequestHash string // SHA-256 of the canonical request: the same epoch asked again has the same hash
	Pool        string // canonical decimal
	Source      string // URL of the accounting service; "" when Usage is inline
	Usage       []byte // inline usage, already sealed (canonical); nil with Source
	Deadline    time.Time
}

// Epoch is one reward epoch: its request, how far its current run got and
// where the run's artifacts are (paths relative to the artifact directory).
type Epoch struct {
	ID          string
	Run         int // 1, then +1 each time a failed epoch is asked for again
	Status      string
	Reason      string
	RequestHash string
	Pool        string
	Source      string
	Inline      bool
	Deadline    time.Time

	InputsHash, InputsPath         string
	Accounts                       int
	TotalUnits, TotalPaid          string
	PayoutsHash, PayoutsPath       string
	RunHash, RunPath               string
	Commitment                     string // hex Merkle root of the payout lines
	CommitmentHash, CommitmentPath string

	IntentsTotal, IntentsEmitted, IntentsAcknowledged int
	EvidenceID                                        string

	CreatedAt, StartedAt, SealedAt, ComputedAt, WrittenAt, IntentsAt, AnchoredAt, FinishedAt, UpdatedAt time.Time
}

// InFlight reports whether the epoch still counts against the in-flight limit.
func (e Epoch) InFlight() bool {
	return e.Status == EpochQueued || e.Status == EpochComputing
}

// ReasonDeadline is the failure reason of an epoch that ran out of time.
const ReasonDeadline = "deadline exceeded"

const epochCols = `id, run, status, reason, request_hash, pool, source, usage IS NOT NULL, deadline_at,
	inputs_hash, inputs_path, accounts, total_units, total_paid, payouts_hash, payouts_path, run_hash, run_path,
	commitment, commitment_hash, commitment_path, intents_total, intents_emitted, intents_acknowledged, evidence_id,
	created_at, started_at, sealed_at, computed_at, written_at, intents_at, anchored_at, finished_at, updated_at`

func scanEpoch(row interface{ Scan(...any) error }, now time.Time) (Epoch, error) {
	var (
		e                                                                    Epoch
		deadline, created, started, sealed, computed, written, intents, anch int64
		finished, updated                                                    int64
	)
	err := row.Scan(&e.ID, &e.Run, &e.Status, &e.Reason, &e.RequestHash, &e.Pool, &e.Source, &e.Inline, &deadline,
		&e.InputsHash, &e.InputsPath, &e.Accounts, &e.TotalUnits, &e.TotalPaid, &e.PayoutsHash, &e.PayoutsPath, &e.RunHash, &e.RunPath,
		&e.Commitment, &e.CommitmentHash, &e.CommitmentPath, &e.IntentsTotal, &e.IntentsEmitted, &e.IntentsAcknowledged, &e.EvidenceID,
		&created, &started, &sealed, &computed, &written, &intents, &anch, &finished, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Epoch{}, ErrNotFound
	}
	if err != nil {
		return Epoch{}, err
	}
	e.Deadline = fromMS(deadline)
	e.CreatedAt, e.StartedAt, e.SealedAt, e.ComputedAt = fromMS(created), fromMS(started), fromMS(sealed), fromMS(computed)
	e.WrittenAt, e.IntentsAt, e.AnchoredAt, e.FinishedAt, e.UpdatedAt = fromMS(written), fromMS(intents), fromMS(anch), fromMS(finished), fromMS(updated)
	// Temporal ends a workflow at its execution timeout without running any of
	// its code, so an epoch past its deadline is failed however far its row got.
	if e.InFlight() && !now.Before(e.Deadline) {
		e.Status, e.Reason = EpochFailed, ReasonDeadline
	}
	return e, nil
}

// inFlightWhere selects the epochs that count against the in-flight limit.
const inFlightWhere = `status IN ('queued', 'computing') AND deadline_at > ?`

// CreateEpoch stores a new epoch as queued, unless the id exists: then it
// returns the stored epoch and created=false, and stores nothing (the caller
// compares request hashes). A new epoch is refused with ErrBusy when
// maxInFlight epochs are already queued or computing.
func (s Epochs) CreateEpoch(ctx context.Context, ne NewEpoch, maxInFlight int) (Epoch, bool, error) {
	now := time.Now()
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "epochs in flight"); err != nil {
			return err
		}
		var n int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM epochs WHERE id = ?`, ne.ID).Scan(&n)
		if err != nil || n > 0 {
			return err
		}
		if err := checkInFlight(ctx, tx, now, maxInFlight); err != nil {
			return err
		}
		var usage any // NULL marks a source epoch
		if ne.Usage != nil {
			usage = ne.Usage
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO epochs (id, run, status, request_hash, pool, source, usage, deadline_at, created_at, updated_at)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ne.ID, EpochQueued, ne.RequestHash, ne.Pool, ne.Source, usage, ms(ne.Deadline), ms(now), ms(now))
		created = err == nil
		return err
	})
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return Epoch{}, false, err
		}
		return Epoch{}, false, fmt.Errorf("store: create epoch %s: %w", ne.ID, err)
	}
	e, err := s.GetEpoch(ctx, ne.ID)
	return e, created, err
}

func checkInFlight(ctx context.Context, tx *txn, now time.Time, max int) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM epochs WHERE `+inFlightWhere, ms(now)).Scan(&n); err != nil {
		return err
	}
	if n >= max {
		return fmt.Errorf("%w: %d epochs are queued or computing, the limit is %d", ErrBusy, n, max)
	}
	return nil
}

// RestartEpoch queues a failed or quarantined epoch again for the same
// request under a new run number, clearing what the last run recorded. It
// returns ErrConflict when the epoch is neither (or was asked for with other
// inputs) and ErrBusy at the in-flight limit. Whether a quarantined epoch
// may run again is the caller's decision (an explicit re-run).
func (s Epochs) RestartEpoch(ctx context.Context, id, requestHash string, deadline time.Time, maxInFlight int) (Epoch, error) {
	now := time.Now()
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "epochs in flight"); err != nil {
			return err
		}
		e, err := scanEpoch(tx.QueryRowContext(ctx, `SELECT `+epochCols+` FROM epochs WHERE id = ?`, id), now)
		if err != nil {
			return err
		}
		if (e.Status != EpochFailed && e.Status != EpochQuarantined) || e.RequestHash != requestHash {
			return fmt.Errorf("epoch %s is %s: %w", id, e.Status, ErrConflict)
		}
		if err := checkInFlight(ctx, tx, now, maxInFlight); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE epochs SET run = run + 1, status = ?, reason = '', deadline_at = ?,
			inputs_hash = '', inputs_path = '', accounts = 0, total_units = '', total_paid = '', payouts_hash = '', payouts_path = '',
			run_hash = '', run_path = '', commitment = '', commitment_hash = '', commitment_path = '',
			intents_total = 0, intents_emitted = 0, intents_acknowledged = 0, evidence_id = '',
			started_at = 0, sealed_at = 0, computed_at = 0, written_at = 0, intents_at = 0, anchored_at = 0, finished_at = 0, updated_at = ?
			WHERE id = ?`, EpochQueued, ms(deadline), ms(now), id)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrBusy) || errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return Epoch{}, err
		}
		return Epoch{}, fmt.Errorf("store: restart epoch %s: %w", id, err)
	}
	return s.GetEpoch(ctx, id)
}

// GetEpoch returns one epoch, or ErrNotFound. An epoch past its deadline that
// never finished is reported failed with ReasonDeadline.
func (s Epochs) GetEpoch(ctx context.Context, id string) (Epoch, error) {
	return scanEpoch(s.r.QueryRowContext(ctx, `SELECT `+epochCols+` FROM epochs WHERE id = ?`, id), time.Now())
}

// EpochRequest is what SealInputs needs: the pool and either the inline
// usage (sealed by the API) or the source to fetch.
type EpochRequest struct {
	Pool   string
	Source string
	Usage  []byte
}

// EpochRequest returns the request of the epoch's current run; ErrConflict
// when run is not the current run (a late activity of an earlier run).
func (s Epochs) EpochRequest(ctx context.Context, id string, run int) (EpochRequest, error) {
	var (
		r   EpochRequest
		cur int
	)
	err := s.r.QueryRowContext(ctx, `SELECT run, pool, source, usage FROM epochs WHERE id = ?`, id).Scan(&cur, &r.Pool, &r.Source, &r.Usage)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("store: epoch %s request: %w", id, err)
	}
	if cur != run {
		return r, fmt.Errorf("epoch %s is on run %d, not %d: %w", id, cur, run, ErrConflict)
	}
	return r, nil
}

// updateEpoch applies set to the epoch's current run while it is computing
// (or queued, for the first step). A late write from an earlier run, or to a
// finished epoch, is refused with ErrConflict.
func (s Epochs) updateEpoch(ctx context.Context, id string, run int, set string, args ...any) error {
	q := `UPDATE epochs SET ` + set + `, updated_at = ? WHERE id = ? AND run = ? AND status IN ('queued', 'computing')`
	res, err := s.w.ExecContext(ctx, q, append(args, ms(time.Now()), id, run)...)
	if err != nil {
		return fmt.Errorf("store: update epoch %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("epoch %s run %d is no longer in flight: %w", id, run, ErrConflict)
	}
	return nil
}

// StartEpoch marks the epoch computing (its first step began).
func (s Epochs) StartEpoch(ctx context.Context, id string, run int) error {
	return s.updateEpoch(ctx, id, run, `status = ?, started_at = CASE started_at WHEN 0 THEN ? ELSE started_at END`, EpochComputing, ms(time.Now()))
}

// RecordSealed records where the sealed inputs are.
func (s Epochs) RecordSealed(ctx context.Context, id string, run int, hash, path string, accounts int) error {
	return s.updateEpoch(ctx, id, run, `inputs_hash = ?, inputs_path = ?, accounts = ?, sealed_at = ?`, hash, path, accounts, ms(time.Now()))
}

// Computed is what ComputeRewards records.
type Computed struct {
	PayoutsHash, PayoutsPath string
	Accounts                 int
	TotalUnits, TotalPaid    string
	Intents                  int // payouts above zero: one settlement intent each
}

// RecordComputed records the split's totals and where the payouts are.
func (s Epochs) RecordComputed(ctx context.Context, id string, run int, c Computed) error {
	return s.updateEpoch(ctx, id, run, `payouts_hash = ?, payouts_path = ?, accounts = ?, total_units = ?, total_paid = ?, intents_total = ?, computed_at = ?`,
		c.PayoutsHash, c.PayoutsPath, c.Accounts, c.TotalUnits, c.TotalPaid, c.Intents, ms(time.Now()))
}

// Artifacts is what WriteArtifacts records.
type Artifacts struct {
	RunHash, RunPath               string
	Commitment                     string
	CommitmentHash, CommitmentPath string
}

// RecordArtifacts records run.json and the commitment.
func (s Epochs) RecordArtifacts(ctx context.Context, id string, run int, a Artifacts) error {
	return s.updateEpoch(ctx, id, run, `run_hash = ?, run_path = ?, commitment = ?, commitment_hash = ?, commitment_path = ?, written_at = ?`,
		a.RunHash, a.RunPath, a.Commitment, a.CommitmentHash, a.CommitmentPath, ms(time.Now()))
}

// RecordIntents records how many intents were sent and acknowledged so far;
// done stamps the time the last one was acknowledged.
func (s Epochs) RecordIntents(ctx context.Context, id string, run int, emitted, acknowledged int, done bool) error {
	at := int64(0)
	if done {
		at = ms(time.Now())
	}
	return s.updateEpoch(ctx, id, run, `intents_emitted = ?, intents_acknowledged = ?, intents_at = ?`, emitted, acknowledged, at)
}

// RecordAnchor links the evidence that anchors the epoch's commitment.
func (s Epochs) RecordAnchor(ctx context.Context, id string, run int, evidenceID string) error {
	return s.updateEpoch(ctx, id, run, `evidence_id = ?, anchored_at = ?`, evidenceID, ms(time.Now()))
}

// FinishEpoch ends the run: completed, quarantined or failed with a reason.
func (s Epochs) FinishEpoch(ctx context.Context, id string, run int, status, reason string) error {
	switch status {
	case EpochCompleted, EpochQuarantined, EpochFailed:
	default:
		return fmt.Errorf("store: finish epoch %s: %q is not a final status", id, status)
	}
	err := s.tx(ctx, func(tx *txn) error {
		now := ms(time.Now())
		res, err := tx.ExecContext(ctx, `UPDATE epochs SET status = ?, reason = ?, finished_at = ?, updated_at = ?
			WHERE id = ? AND run = ? AND status IN ('queued', 'computing')`, status, reason, now, now, id, run)
		if err != nil {
			return fmt.Errorf("store: finish epoch %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("epoch %s run %d is no longer in flight: %w", id, run, ErrConflict)
		}
		return recordEvent(ctx, tx, "epoch."+status, EventData{ID: id, Status: status,
			Links: map[string]string{"epoch": "/rewarder/epochs/" + id}})
	})
	if err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("store: finish epoch %s: %w", id, err)
	}
	return err
}

// EpochStats are the numbers behind the epoch metrics.
type EpochStats struct {
	InFlight       int // queued or computing, within their deadline
	Quarantined    int
	IntentsPending int // intents of in-flight epochs not yet acknowledged
}

// EpochStats counts epochs for /metrics.
func (s Epochs) EpochStats(ctx context.Context) (EpochStats, error) {
	var st EpochStats
	err := s.r.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN `+inFlightWhere+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'quarantined' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN `+inFlightWhere+` THEN intents_total - intents_acknowledged ELSE 0 END), 0)
		FROM epochs`, ms(time.Now()), ms(time.Now())).Scan(&st.InFlight, &st.Quarantined, &st.IntentsPending)
	if err != nil {
		return st, fmt.Errorf("store: epoch stats: %w", err)
	}
	return st, nil
}

// QuarantinedEpochs returns the ids of up to limit quarantined epochs, the
// most recently finished first.
func (s Epochs) QuarantinedEpochs(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM epochs WHERE status = 'quarantined' ORDER BY finished_at DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: quarantined epochs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: quarantined epochs: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
