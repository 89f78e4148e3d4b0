package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Re-driving dead letters (docs/retries.md, job queue): an anchor whose
// batch was dead-lettered keeps its outbox row (or its place in the
// batch's span) pointing at that batch; re-driving it sets the row's batch
// back to NULL, so the next batch of its chain takes it first, with its
// attempts counted anew. A batch's spans are first turned into the outbox
// rows they stand for (materializeSpans). The batch itself stays
// dead_letter, the record of what happened.

// RedriveFilter selects dead-lettered anchors. Each field set narrows the
// selection; the zero filter selects every dead-lettered anchor.
type RedriveFilter struct {
	Chain   string
	BatchID int64
	// Since and Until bound when the batch was dead-lettered: Since ≤ t <
	// Until; a zero time leaves that side open.
	Since, Until time.Time
}

// RedriveBatch is one dead-lettered batch a re-drive takes anchors from.
type RedriveBatch struct {
	ID             int64
	Chain          string
	Evidence       int // its anchors re-driven (or, in a dry run, waiting to be)
	DeadLetteredAt time.Time
	LastError      string
}

// RedriveResult is what a re-drive put back, or, in a dry run, would.
type RedriveResult struct {
	Evidence int            // distinct evidence
	Anchors  int            // (evidence, chain) anchors
	ByChain  map[string]int // anchors by chain
	Batches  []RedriveBatch // in batch order
	IDs      []string       // the first RedriveIDsShown evidence, in intake order (a dry run) or as re-driven
}

// RedriveIDsShown is how many evidence ids a re-drive's result lists.
const RedriveIDsShown = 100

// redrivePage is how many anchors one re-drive transaction puts back.
const redrivePage = 500

// deadCond is the condition on batches b that they are dead-lettered and
// selected by f.
func deadCond(f RedriveFilter) (string, []any) {
	cond, args := []string{`b.state = ?`}, []any{BatchDeadLetter}
	if f.Chain != "" {
		cond, args = append(cond, `b.chain = ?`), append(args, f.Chain)
	}
	if f.BatchID != 0 {
		cond, args = append(cond, `b.id = ?`), append(args, f.BatchID)
	}
	if !f.Since.IsZero() {
		cond, args = append(cond, `b.updated_at >= ?`), append(args, ms(f.Since))
	}
	if !f.Until.IsZero() {
		cond, args = append(cond, `b.updated_at < ?`), append(args, ms(f.Until))
	}
	return strings.Join(cond, ` AND `), args
}

// deadBatches lists the dead-lettered batches the filter selects that
// still hold anchors, each with how many.
func (s Maintenance) deadBatches(ctx context.Context, f RedriveFilter) ([]RedriveBatch, error) {
	cond, args := deadCond(f)
	rows, err := s.r.QueryContext(ctx, `SELECT d.id, d.chain, d.updated_at, d.last_error, d.n FROM (
			SELECT b.id AS id, b.chain AS chain, b.updated_at AS updated_at, b.last_error AS last_error,
				(SELECT COUNT(*) FROM outbox o WHERE o.batch_id = b.id) + (SELECT COALESCE(SUM(s.size), 0) FROM batch_spans s WHERE s.batch_id = b.id) AS n
			FROM batches b WHERE `+cond+`) d
		WHERE d.n > 0 ORDER BY d.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: dead-lettered batches: %w", err)
	}
	defer rows.Close()
	var out []RedriveBatch
	for rows.Next() {
		var (
			b  RedriveBatch
			at int64
		)
		if err := rows.Scan(&b.ID, &b.Chain, &at, &b.LastError, &b.Evidence); err != nil {
			return nil, err
		}
		b.DeadLetteredAt = fromMS(at)
		out = append(out, b)
	}
	return out, rows.Err()
}

// DeadLetters is a dry run of Redrive: what it would put back now.
func (s Maintenance) DeadLetters(ctx context.Context, f RedriveFilter) (RedriveResult, error) {
	batches, err := s.deadBatches(ctx, f)
	if err != nil {
		return RedriveResult{}, err
	}
	res := RedriveResult{ByChain: map[string]int{}, Batches: batches}
	if len(batches) == 0 {
		return res, nil
	}
	for _, b := range batches {
		res.Anchors += b.Evidence
		res.ByChain[b.Chain] += b.Evidence
	}
	cond, args := deadCond(f)
	dead := `(SELECT b.id FROM batches b WHERE ` + cond + `)`
	members := `(SELECT o.evidence_seq AS seq FROM outbox o WHERE o.batch_id IN ` + dead + `
		UNION ALL SELECT p.seq FROM ` + spanMembers("p") + ` AND s.batch_id IN ` + dead + `)`
	args = append(args, args...)
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(DISTINCT m.seq) FROM `+members+` m`, args...).Scan(&res.Evidence); err != nil {
		return RedriveResult{}, fmt.Errorf("store: dead letters: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT e.id FROM evidence e WHERE e.seq IN (SELECT m.seq FROM `+members+` m)
		ORDER BY e.seq LIMIT `+fmt.Sprint(RedriveIDsShown), args...)
	if err != nil {
		return RedriveResult{}, fmt.Errorf("store: dead letters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return RedriveResult{}, err
		}
		res.IDs = append(res.IDs, id)
	}
	return res, rows.Err()
}

// Redrive puts back every dead-lettered anchor the filter selects, batch by
// batch, a page of anchors per transaction (each evidence as RetryEvidence
// does it), and reports what it put back. Re-running it after it succeeded
// puts back nothing; runs at the same time put back each anchor once, and
// each reports only what it moved itself.
func (s Maintenance) Redrive(ctx context.Context, f RedriveFilter) (RedriveResult, error) {
	batches, err := s.deadBatches(ctx, f)
	if err != nil {
		return RedriveResult{}, err
	}
	res := RedriveResult{ByChain: map[string]int{}}
	seen := map[int64]bool{}
	defer func() {
		if res.Anchors > 0 {
			s.notify()
		}
	}()
	for _, b := range batches {
		b.Evidence = 0
		if err := s.tx(ctx, func(tx *txn) error { return materializeSpans(ctx, tx, b.ID) }); err != nil {
			return res, fmt.Errorf("store: re-drive batch %d: %w", b.ID, err)
		}
		for {
			moved, done, err := s.redrivePage(ctx, b.ID, b.Chain)
			if err != nil {
				return res, fmt.Errorf("store: re-drive batch %d: %w", b.ID, err)
			}
			for _, ev := range moved {
				b.Evidence++
				if !seen[ev.seq] {
					seen[ev.seq] = true
					if len(res.IDs) < RedriveIDsShown {
						res.IDs = append(res.IDs, ev.id)
					}
				}
			}
			if done {
				break
			}
		}
		if b.Evidence > 0 {
			res.Anchors += b.Evidence
			res.ByChain[b.Chain] += b.Evidence
			res.Batches = append(res.Batches, b)
		}
	}
	res.Evidence = len(seen)
	return res, nil
}

type redriven struct {
	seq int64
	id  string
}

// redrivePage puts back up to redrivePage anchors still in dead-lettered
// batch `batch`, in one transaction; done when none is left.
func (s Maintenance) redrivePage(ctx context.Context, batch int64, chain string) (moved []redriven, done bool, err error) {
	err = s.tx(ctx, func(tx *txn) error {
		moved = moved[:0]
		rows, err := tx.QueryContext(ctx, `SELECT o.evidence_seq, e.id FROM outbox o JOIN evidence e ON e.seq = o.evidence_seq
			WHERE o.batch_id = ? ORDER BY o.evidence_seq LIMIT ?`, batch, redrivePage)
		if err != nil {
			return err
		}
		var page []redriven
		for rows.Next() {
			var r redriven
			if err := rows.Scan(&r.seq, &r.id); err != nil {
				rows.Close()
				return err
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		done = len(page) == 0
		if done {
			return nil
		}
		seqs := make([]int64, len(page))
		for i, r := range page {
			seqs[i] = r.seq
		}
		if err := s.d.lockEvidence(ctx, tx, `seq IN (`+marks(len(seqs))+`)`, anys(seqs)...); err != nil {
			return err
		}
		got, err := redriveAnchors(ctx, tx, seqs, batch, chain, time.Now())
		if err != nil {
			return err
		}
		for _, r := range page {
			if got[r.seq] {
				moved = append(moved, r)
			}
		}
		return nil
	})
	return moved, done, err
}

// redriveAnchors puts the anchors of evidence seqs that are in
// dead-lettered batches back to wait for a batch (only those in batch
// `batch` on chain, when batch is not 0): the caller turned their batches'
// spans into rows already (materializeSpans). It returns the evidence it moved an anchor of. The caller
// holds the evidence's row locks (lockEvidence); an anchor that another
// transaction moved meanwhile is no longer in the batch and is not moved
// twice. One statement moves them all: a statement per evidence costs
// milliseconds each on SQLite.
func redriveAnchors(ctx context.Context, tx *txn, seqs []int64, batch int64, chain string, now time.Time) (map[int64]bool, error) {
	q := `UPDATE outbox SET batch_id = NULL, leaf_index = NULL
		WHERE evidence_seq IN (` + marks(len(seqs)) + `) AND batch_id IN (SELECT id FROM batches WHERE state = ?)`
	args := append(anys(seqs), BatchDeadLetter)
	if batch != 0 {
		q, args = q+` AND chain = ? AND batch_id = ?`, append(args, chain, batch)
	}
	rows, err := tx.QueryContext(ctx, q+` RETURNING evidence_seq`, args...)
	if err != nil {
		return nil, err
	}
	moved := map[int64]bool{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return nil, err
		}
		moved[seq] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(moved) == 0 {
		return moved, err
	}
	touched := make([]int64, 0, len(moved))
	for _, seq := range seqs {
		if moved[seq] {
			touched = append(touched, seq)
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE evidence SET updated_at = ? WHERE seq IN (`+marks(len(touched))+`)`, append([]any{ms(now)}, anys(touched)...)...)
	return moved, err
}

// materializeDeadSpans turns into outbox rows the spans of the
// dead-lettered batches that hold the evidence whose id is id.
func materializeDeadSpans(ctx context.Context, tx *txn, id string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT k.batch_id FROM (SELECT `+spanOfE+` AS batch_id FROM evidence e, anchor_cursors l
		WHERE e.id = ? AND `+laneOfE+`) k JOIN batches b ON b.id = k.batch_id WHERE b.state = ?`, id, BatchDeadLetter)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return materializeSpans(ctx, tx, ids...)
}

// marks is n comma-separated placeholders.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys(seqs []int64) []any {
	out := make([]any, len(seqs))
	for i, s := range seqs {
		out[i] = s
	}
	return out
}
