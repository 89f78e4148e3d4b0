package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// EvidenceTiming is when one evidence was taken in and last changed (for a
// confirmed evidence: when its last chain confirmed), and its batches.
type EvidenceTiming struct {
	Seq       int64
	ID        string
	Status    Status
	CreatedAt time.Time
	UpdatedAt time.Time
	Batches   []int64 // one per chain that has batched it
}

// BatchTiming is when one batch was formed and its first transaction was
// journaled (just before its broadcast), and how many it took.
type BatchTiming struct {
	ID        int64
	Chain     string
	Size      int
	State     string
	CreatedAt time.Time
	FirstTx   time.Time // zero before the first transaction
	Txs       int
}

// LastSeq is the intake sequence number of the newest evidence (0 when none).
func (s Stats) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM evidence`).Scan(&seq)
	return seq, err
}

// EvidenceTimings returns the timings of the evidence taken in after seq
// `after`, up to and including `upto`, in intake order. `keeper bench`
// measures latencies and throughput from them.
func (s Stats) EvidenceTimings(ctx context.Context, after, upto int64) ([]EvidenceTiming, error) {
	// An evidence has an outbox row or a span per chain whose batch took
	// it; the others wait on their lanes (pending): a LEFT JOIN gives a
	// row without a chain for an evidence none took yet.
	rows, err := s.r.QueryContext(ctx, `SELECT e.seq, e.id, e.created_at, e.updated_at, `+chainCount+`, COALESCE(a.batch_id, 0), COALESCE(b.state, ''), COALESCE(b.updated_at, 0),
			COALESCE(a.chain, '')
		FROM evidence e LEFT JOIN `+anchorsIn+` a ON a.seq = e.seq LEFT JOIN batches b ON b.id = a.batch_id
		WHERE e.seq > ?1 AND e.seq <= ?2 ORDER BY e.seq, a.chain`, after, upto)
	if err != nil {
		return nil, fmt.Errorf("store: evidence timings: %w", err)
	}
	defer rows.Close()
	var (
		out     []EvidenceTiming
		anchors []AnchorState // of the last evidence in out
	)
	for rows.Next() {
		var (
			t                 EvidenceTiming
			state, chain      string
			created, upd, bup int64
			batch             int64
			chains            int
		)
		if err := rows.Scan(&t.Seq, &t.ID, &created, &upd, &chains, &batch, &state, &bup, &chain); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].Seq != t.Seq {
			t.CreatedAt, t.UpdatedAt = fromMS(created), fromMS(upd)
			out, anchors = append(out, t), anchors[:0]
		}
		last := &out[len(out)-1]
		if batch != 0 {
			last.Batches = append(last.Batches, batch)
		}
		if at := fromMS(bup); at.After(last.UpdatedAt) {
			last.UpdatedAt = at
		}
		if chain != "" {
			anchors = append(anchors, AnchorState{Status: anchorStatus(state)})
		}
		last.Status = evidenceStatus(anchors)
		if len(anchors) < chains {
			last.Status = evidenceStatus(append(anchors, AnchorState{Status: StatusPending}))
		}
	}
	return out, rows.Err()
}

// BatchTimings returns the timings of the batches holding evidence taken in
// after seq `after`, up to and including `upto`.
func (s Stats) BatchTimings(ctx context.Context, after, upto int64) ([]BatchTiming, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT b.id, b.chain, b.size, b.state, b.created_at,
			COALESCE((SELECT MIN(t.created_at) FROM tx_refs t WHERE t.batch_id = b.id), 0),
			(SELECT COUNT(*) FROM tx_refs t WHERE t.batch_id = b.id)
		FROM batches b WHERE b.id IN (SELECT a.batch_id FROM `+anchorsIn+` a WHERE a.batch_id IS NOT NULL)
		ORDER BY b.id`, after, upto)
	if err != nil {
		return nil, fmt.Errorf("store: batch timings: %w", err)
	}
	defer rows.Close()
	var out []BatchTiming
	for rows.Next() {
		var (
			b            BatchTiming
			created, ftx int64
		)
		if err := rows.Scan(&b.ID, &b.Chain, &b.Size, &b.State, &created, &ftx, &b.Txs); err != nil {
			return nil, err
		}
		b.CreatedAt, b.FirstTx = fromMS(created), fromMS(ftx)
		out = append(out, b)
	}
	return out, rows.Err()
}

// Unsettled reports whether any evidence with seq in (after, upto] has an
// anchor neither confirmed nor dead-lettered. It reads only what is in
// flight (pending outbox rows, unsettled batches), never the whole window.
// The lanes' condition numbers its own placeholders after the five that
// come first.
func (s Stats) Unsettled(ctx context.Context, after, upto int64) (bool, error) {
	cs, err := cursors(ctx, s.r, "")
	if err != nil {
		return false, fmt.Errorf("store: unsettled evidence: %w", err)
	}
	tail, tailArgs := pendingTail(cs)
	var one int
	err = s.r.QueryRowContext(ctx, `SELECT 1 WHERE
		EXISTS (SELECT 1 FROM outbox WHERE batch_id IS NULL AND evidence_seq > ?1 AND evidence_seq <= ?2)
		OR EXISTS (SELECT 1 FROM batches b WHERE b.state IN (?3, ?4, ?5)
			AND (EXISTS (SELECT 1 FROM outbox o WHERE o.batch_id = b.id AND o.evidence_seq > ?1 AND o.evidence_seq <= ?2)
				OR EXISTS (SELECT 1 FROM `+spanMembers("p")+` AND s.batch_id = b.id AND p.seq > ?1 AND p.seq <= ?2)))
		OR EXISTS (SELECT 1 FROM evidence e WHERE e.seq > ?1 AND e.seq <= ?2 AND `+numbered(tail, 6)+`)`,
		append([]any{after, upto, BatchFormed, BatchStarted, BatchSubmitted}, tailArgs...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: unsettled evidence: %w", err)
	}
	return true, nil
}
