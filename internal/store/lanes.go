package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lanes (migration 9). Intake writes an evidence's row and nothing else; a
// batch that takes it names it by a span of its lane (spans.go, migration
// 15; before it, an outbox row per anchor). A lane is a chain
// and a priority; its cursor is the intake sequence up to which the lane's
// evidence has been taken into batches. So an anchor is pending when its
// evidence is on the lane's chain and was taken in after the cursor, or when
// its outbox row says so (batch_id NULL: a retried anchor, or one taken in
// before migration 9, whose rows intake wrote).
//
// A cursor only moves forward, inside the transaction that forms a batch,
// over rows that are committed: on SQLite that transaction is the one
// writer; on PostgreSQL, intake transactions hold a shared lock that
// forming a batch takes exclusively for a moment to read the highest
// sequence every earlier intake has committed (intakeWatermark), so an
// evidence whose transaction commits late is never passed over.
//
// Lanes are between parts: Intake makes sure an evidence's lanes have a
// cursor (ensureLanes) and holds intake open (holdIntake), Anchors moves
// the cursors as it forms batches (claimLanes) and Log reads how far intake
// has committed (intakeWatermark); so these are the shared db's methods.

// laneCursor is one lane's cursor.
type laneCursor struct {
	chain    string
	priority int
	seq      int64
}

// onChain is true for evidence e (of alias e) listing the chain given as
// its argument, a pattern from chainPattern.
const onChain = `(',' || e.chains || ',') LIKE ? ESCAPE '!'`

// chainPattern is onChain's argument for chain.
func chainPattern(chain string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return "%," + r.Replace(chain) + ",%"
}

// lane is a chain and a priority, the key of Store.lanes.
type lane struct {
	chain    string
	priority int
}

// ensureLanes makes sure each lane of evs has a cursor before their rows
// are written (once per lane and process): the dispatcher finds pending
// evidence through the cursors. A new lane starts where migration 9 did.
func (s *db) ensureLanes(ctx context.Context, evs []Evidence) error {
	for _, ev := range evs {
		for _, c := range ev.Chains {
			key := lane{c, ev.Priority}
			if _, ok := s.lanes.Load(key); ok {
				continue
			}
			if _, err := s.w.ExecContext(ctx, `INSERT INTO anchor_cursors (chain, priority, seq)
				SELECT ?, ?, seq FROM anchor_start WHERE true ON CONFLICT (chain, priority) DO NOTHING`, c, ev.Priority); err != nil {
				return fmt.Errorf("store: lane %s/%d: %w", c, ev.Priority, err)
			}
			s.lanes.Store(key, true)
		}
	}
	return nil
}

// cursors returns the lanes' cursors, of one chain or (chain "") all, by
// chain then priority.
func cursors(ctx context.Context, q querier, chain string) ([]laneCursor, error) {
	query, args := `SELECT chain, priority, seq FROM anchor_cursors ORDER BY chain, priority`, []any(nil)
	if chain != "" {
		query, args = `SELECT chain, priority, seq FROM anchor_cursors WHERE chain = ? ORDER BY priority`, []any{chain}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []laneCursor
	for rows.Next() {
		var c laneCursor
		if err := rows.Scan(&c.chain, &c.priority, &c.seq); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// pendingTail is a condition on evidence e: some anchor of it waits past
// its lane's cursor (for cs, the cursors of every lane or of one chain's).
func pendingTail(cs []laneCursor) (string, []any) {
	if len(cs) == 0 {
		return `(1 = 0)`, nil
	}
	terms := make([]string, len(cs))
	args := make([]any, 0, 3*len(cs))
	for i, c := range cs {
		terms[i] = `(e.priority = ? AND e.seq > ? AND ` + onChain + `)`
		args = append(args, c.priority, c.seq, chainPattern(c.chain))
	}
	return `(` + strings.Join(terms, ` OR `) + `)`, args
}

// chainCount is the number of chains evidence e is anchored on.
const chainCount = `(LENGTH(e.chains) - LENGTH(REPLACE(e.chains, ',', '')) + 1)`

// intakeWatermark is, on PostgreSQL, the highest intake sequence below which
// every intake transaction has ended: it waits for those running to commit
// and holds new ones back meanwhile (a moment). On SQLite it is not needed
// (the writer is one) and returns the largest sequence there can be.
func (s *db) intakeWatermark(ctx context.Context) (int64, error) {
	if !s.d.postgres {
		return 1<<63 - 1, nil
	}
	var w int64
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':intake'))`); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM evidence`).Scan(&w)
	})
	return w, err
}

// holdIntake is what each intake transaction does first on PostgreSQL (see
// intakeWatermark).
func (s *db) holdIntake(ctx context.Context, tx *txn) error {
	if !s.d.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared(hashtext(current_schema() || ':intake'))`)
	return err
}

// claimLanes forms a batch of up to maxItems of the chain's evidence waiting
// past its lanes' cursors, by priority then intake order, up to watermark:
// it writes a span per lane it takes from (spans.go) and moves the
// cursors. It returns the batch's id, size and best priority, or
// errNothingPending.
func (s *db) claimLanes(ctx context.Context, tx *txn, chain string, maxItems int, now time.Time, watermark int64) (id int64, n, prio int, err error) {
	if err := s.d.lock(ctx, tx, "lanes:"+chain); err != nil {
		return 0, 0, 0, err
	}
	var top int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM evidence`).Scan(&top); err != nil {
		return 0, 0, 0, err
	}
	top = min(top, watermark)
	cs, err := cursors(ctx, tx, chain)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, c := range cs {
		if n >= maxItems {
			break
		}
		if c.seq >= top {
			continue
		}
		if id == 0 {
			if err := tx.QueryRowContext(ctx, `INSERT INTO batches (chain, size, priority, state, created_at, updated_at)
				VALUES (?, 0, ?, ?, ?, ?) RETURNING id`, chain, c.priority, BatchFormed, ms(now), ms(now)).Scan(&id); err != nil {
				return 0, 0, 0, err
			}
		}
		// An evidence with its row already (written by a keeper from before
		// migration 9 still running beside this one) is batched from it.
		// Every evidence of the lane up to top is taken unless the batch
		// filled up first; then up to the last one taken. The span names
		// them (spans.go): no row per evidence.
		var (
			took int
			last int64
		)
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(seq), 0)
			FROM (SELECT e.seq FROM evidence e WHERE e.priority = ? AND e.seq > ? AND e.seq <= ? AND `+onChain+`
					AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.evidence_seq = e.seq AND o.chain = ?)
				ORDER BY e.seq LIMIT ?) AS taken`,
			c.priority, c.seq, top, chainPattern(chain), chain, maxItems-n).Scan(&took, &last); err != nil {
			return 0, 0, 0, err
		}
		to := top
		if took == maxItems-n {
			to = last
		}
		if took > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO batch_spans (batch_id, chain, priority, after_seq, upto_seq, first_leaf, size)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, id, chain, c.priority, c.seq, to, n, took); err != nil {
				return 0, 0, 0, err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE anchor_cursors SET seq = ? WHERE chain = ? AND priority = ?`, to, chain, c.priority); err != nil {
			return 0, 0, 0, err
		}
		if took > 0 && n == 0 {
			prio = c.priority
		}
		n += took
	}
	if n == 0 {
		return 0, 0, 0, errNothingPending
	}
	_, err = tx.ExecContext(ctx, `UPDATE batches SET size = ?, priority = ? WHERE id = ?`, n, prio, id)
	return id, n, prio, err
}

// hasOutboxPending reports whether the chain has outbox rows waiting for a
// batch (retried anchors, or anchors taken in before migration 9).
func hasOutboxPending(ctx context.Context, q querier, chain string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM outbox WHERE chain = ? AND batch_id IS NULL LIMIT 1`, chain).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// numbered turns each ? of q into ?N, counting from first, for a query whose
// other placeholders are numbered.
func numbered(q string, first int) string {
	var b strings.Builder
	for _, part := range strings.SplitAfter(q, "?") {
		if p, ok := strings.CutSuffix(part, "?"); ok {
			b.WriteString(p + "?" + strconv.Itoa(first))
			first++
			continue
		}
		b.WriteString(part)
	}
	return b.String()
}
