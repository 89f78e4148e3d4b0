package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Anchors owns batches (batches), the spans and outbox rows that put
// evidence in them (batch_spans, outbox; spans.go) and every transaction
// signed for a batch (tx_refs): forming a batch from the lanes (moving
// their cursors, anchor_cursors), recording its submission, attempts,
// confirmation or dead letter, and the confirmed batches' Merkle trees
// (trees.go).
type Anchors struct{ *db }

// Batch states. A batch is formed by the dispatcher, started once its
// workflow exists, submitted when its transaction was broadcast, and ends
// confirmed or dead_letter.
const (
	BatchFormed     = "formed"
	BatchStarted    = "started"
	BatchSubmitted  = "submitted"
	BatchConfirmed  = "confirmed"
	BatchDeadLetter = "dead_letter"
)

// Batch is one group of evidence anchored by one transaction on one chain.
type Batch struct {
	ID        int64
	Chain     string
	Size      int
	Priority  int // the highest (smallest number) priority of its evidence
	State     string
	Root      [32]byte
	TxRef     string
	Block     uint64
	BlockTime time.Time
	Attempts  int
	LastError string
	CreatedAt time.Time
}

// PendingChains returns the chains that have evidence waiting for a batch,
// with how many wait and when the oldest arrived.
func (s Anchors) PendingChains(ctx context.Context) (map[string]PendingInfo, error) {
	// Outbox rows waiting (retried anchors) are counted from the outbox's
	// own index; only the oldest (first taken in) of each chain is looked up
	// in evidence.
	rows, err := s.r.QueryContext(ctx, `SELECT p.chain, p.n, e.created_at FROM
		(SELECT chain, COUNT(*) AS n, MIN(evidence_seq) AS oldest FROM outbox WHERE batch_id IS NULL GROUP BY chain) p
		JOIN evidence e ON e.seq = p.oldest`)
	if err != nil {
		return nil, fmt.Errorf("store: pending chains: %w", err)
	}
	defer rows.Close()
	out := map[string]PendingInfo{}
	for rows.Next() {
		var (
			c      string
			p      PendingInfo
			oldest int64
		)
		if err := rows.Scan(&c, &p.Count, &oldest); err != nil {
			return nil, err
		}
		p.Oldest = fromMS(oldest)
		out[c] = p
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	cs, err := cursors(ctx, s.r, "")
	if err != nil {
		return nil, fmt.Errorf("store: pending chains: %w", err)
	}
	for chain, lanes := range byChain(cs) {
		tail, args := pendingTail(lanes)
		var (
			n      int
			oldest int64
		)
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MIN(e.created_at), 0) FROM evidence e WHERE `+tail, args...).Scan(&n, &oldest); err != nil {
			return nil, fmt.Errorf("store: pending on %s: %w", chain, err)
		}
		if n > 0 {
			out[chain] = joinPending(out[chain], PendingInfo{Count: n, Oldest: fromMS(oldest)})
		}
	}
	return out, nil
}

// byChain groups cursors by chain.
func byChain(cs []laneCursor) map[string][]laneCursor {
	out := map[string][]laneCursor{}
	for _, c := range cs {
		out[c.chain] = append(out[c.chain], c)
	}
	return out
}

// joinPending adds up what waits of one chain in two places.
func joinPending(a, b PendingInfo) PendingInfo {
	if a.Count == 0 {
		return b
	}
	if b.Count == 0 {
		return a
	}
	oldest := a.Oldest
	if b.Oldest.Before(oldest) {
		oldest = b.Oldest
	}
	return PendingInfo{Count: a.Count + b.Count, Oldest: oldest, Urgent: a.Urgent || b.Urgent}
}

// PendingInfo describes a chain's waiting evidence.
type PendingInfo struct {
	Count  int
	Oldest time.Time
	Urgent bool // some of it is priority 1
}

// PendingUpTo is PendingChains for the dispatcher: all it needs to know is
// whether a chain has evidence waiting and whether a batch would be full.
// A chain's count is exact when it reaches upTo (and then stops there);
// below that it is an upper bound, exact unless the chain's pending
// evidence is interleaved with other chains'. Nothing scans the whole
// backlog, so a deep one (Temporal down for a while, one evidence per
// batch) costs each round a few index lookups per chain instead of a pass
// over every waiting row.
func (s Anchors) PendingUpTo(ctx context.Context, upTo int) (map[string]PendingInfo, error) {
	out, err := s.outboxPendingUpTo(ctx, upTo)
	if err != nil {
		return nil, err
	}
	cs, err := cursors(ctx, s.r, "")
	if err != nil {
		return nil, fmt.Errorf("store: pending chains: %w", err)
	}
	for chain, lanes := range byChain(cs) {
		p, err := s.lanesUpTo(ctx, chain, lanes, upTo)
		if err != nil {
			return nil, fmt.Errorf("store: pending on %s: %w", chain, err)
		}
		if p.Count > 0 {
			p = joinPending(out[chain], p)
			p.Count = min(p.Count, upTo)
			out[chain] = p
		}
	}
	return out, nil
}

// lanesUpTo is PendingUpTo for one chain's lanes. Per lane, the first and
// last evidence past the cursor bound the count from above (exactly when
// the chain's evidence is not interleaved with other chains'); only a bound
// that reaches upTo is checked by counting.
func (s Anchors) lanesUpTo(ctx context.Context, chain string, lanes []laneCursor, upTo int) (PendingInfo, error) {
	var (
		p     PendingInfo
		bound int64
		first int64 // the oldest evidence waiting
		found []laneCursor
	)
	pattern := chainPattern(chain)
	for _, l := range lanes {
		var lo, hi int64
		err := s.r.QueryRowContext(ctx, `SELECT e.seq FROM evidence e WHERE e.priority = ? AND e.seq > ? AND `+onChain+` ORDER BY e.seq LIMIT 1`,
			l.priority, l.seq, pattern).Scan(&lo)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return p, err
		}
		if err := s.r.QueryRowContext(ctx, `SELECT e.seq FROM evidence e WHERE e.priority = ? AND e.seq > ? AND `+onChain+` ORDER BY e.seq DESC LIMIT 1`,
			l.priority, l.seq, pattern).Scan(&hi); err != nil {
			return p, err
		}
		bound += hi - lo + 1
		if first == 0 || lo < first {
			first = lo
		}
		p.Urgent = p.Urgent || l.priority == 1
		found = append(found, l)
	}
	if len(found) == 0 {
		return p, nil
	}
	p.Count = int(min(bound, int64(upTo)))
	if bound >= int64(upTo) {
		p.Count = 0
		for _, l := range found {
			var n int
			if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM evidence e WHERE e.priority = ? AND e.seq > ? AND `+onChain+` LIMIT ?) AS waiting`,
				l.priority, l.seq, pattern, upTo-p.Count).Scan(&n); err != nil {
				return p, err
			}
			if p.Count += n; p.Count >= upTo {
				break
			}
		}
	}
	var at int64
	if err := s.r.QueryRowContext(ctx, `SELECT created_at FROM evidence WHERE seq = ?`, first).Scan(&at); err != nil {
		return p, err
	}
	p.Oldest = fromMS(at)
	return p, nil
}

// outboxPendingUpTo is PendingUpTo for outbox rows waiting for a batch.
func (s Anchors) outboxPendingUpTo(ctx context.Context, upTo int) (map[string]PendingInfo, error) {
	// The chains with pending rows, one index probe each (a loose index scan).
	pendingIndex := s.d.indexedBy("outbox_pending")
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE c(chain) AS (
			SELECT (SELECT MIN(chain) FROM outbox`+pendingIndex+` WHERE batch_id IS NULL)
			UNION ALL
			SELECT (SELECT MIN(chain) FROM outbox`+pendingIndex+` WHERE batch_id IS NULL AND chain > c.chain)
			FROM c WHERE c.chain IS NOT NULL)
		SELECT chain FROM c WHERE chain IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("store: pending chains: %w", err)
	}
	var chainList []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		chainList = append(chainList, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]PendingInfo{}
	for _, c := range chainList {
		var (
			p             PendingInfo
			bound, oldest int64
			urgent        int
		)
		// Per priority, the first and last pending intake sequence, each the
		// end of its part of the pending index: the oldest is the smallest
		// first, and the sum of (last - first + 1) bounds the count from
		// above, exactly when the chain's evidence is not interleaved with
		// other chains'. Only a bound that reaches upTo is checked by
		// counting, so a long backlog that is not a full batch yet costs a
		// few index probes, not a pass over it.
		err := s.r.QueryRowContext(ctx, `WITH prio(v) AS (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)),
			ends AS (SELECT
				(SELECT MIN(evidence_seq) FROM outbox WHERE chain = ?1 AND batch_id IS NULL AND priority = prio.v) AS lo,
				(SELECT MAX(evidence_seq) FROM outbox WHERE chain = ?1 AND batch_id IS NULL AND priority = prio.v) AS hi
				FROM prio)
			SELECT
				CAST(COALESCE(SUM(hi - lo + 1), 0) AS BIGINT),
				COALESCE((SELECT e.created_at FROM evidence e WHERE e.seq = (SELECT MIN(lo) FROM ends)), 0),
				(SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE chain = ?1 AND batch_id IS NULL AND priority = 1 LIMIT 1) AS first)
			FROM ends`, c).Scan(&bound, &oldest, &urgent)
		if err != nil {
			return nil, fmt.Errorf("store: pending on %s: %w", c, err)
		}
		p.Count, p.Urgent = int(min(bound, int64(upTo))), urgent > 0
		if bound >= int64(upTo) {
			if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE chain = ? AND batch_id IS NULL LIMIT ?) AS waiting`, c, upTo).Scan(&p.Count); err != nil {
				return nil, fmt.Errorf("store: pending on %s: %w", c, err)
			}
		}
		if p.Count > 0 {
			p.Oldest = fromMS(oldest)
			out[c] = p
		}
	}
	return out, nil
}

// LastBatchAt is when the chain's newest batch was formed (zero: never).
func (s Anchors) LastBatchAt(ctx context.Context, chain string) (time.Time, error) {
	at, _, err := s.LastBatch(ctx, chain)
	return at, err
}

// AwaitingSubmit reports whether the chain has a batch that has not been
// submitted yet; the dispatcher lets the next batch grow meanwhile.
func (s Anchors) AwaitingSubmit(ctx context.Context, chain string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM batches WHERE chain = ? AND state IN (?, ?)`, chain, BatchFormed, BatchStarted).Scan(&n)
	return n > 0, err
}

// QueuedBatches counts the chain's batches that Temporal still has work
// for and that do not simply await finality: formed, started or submitted,
// less those with a finality wait (docs/anchoring.md, back-pressure).
func (s Anchors) QueuedBatches(ctx context.Context, chain string) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM batches WHERE chain = ?1 AND state IN (?2, ?3, ?4))
		- (SELECT COUNT(*) FROM confirm_waits WHERE chain = ?1)`, chain, BatchFormed, BatchStarted, BatchSubmitted).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: queued batches on %s: %w", chain, err)
	}
	return max(n, 0), nil
}

// FormBatch takes up to maxItems pending anchors of a chain, by priority
// then age, into a new batch, in one transaction: outbox rows waiting for a
// batch first, else the evidence past the chain's lane cursors (lanes.go). ok is false when nothing
// was pending. Dispatchers on several nodes may form batches of one chain at
// once: each outbox row lands in exactly one batch.
func (s Anchors) FormBatch(ctx context.Context, chain string, maxItems int) (b Batch, ok bool, err error) {
	return s.FormBatchAfter(ctx, chain, maxItems, time.Time{})
}

// FormBatchAfter is FormBatch for a dispatcher that decided to form the
// batch because the chain's newest batch was formed at seen: it forms
// nothing when a newer one was formed meanwhile (by a dispatcher on another
// node), so that nodes deciding at one moment form one batch, not one each.
// A zero seen forms whatever the newest batch.
func (s Anchors) FormBatchAfter(ctx context.Context, chain string, maxItems int, seen time.Time) (b Batch, ok bool, err error) {
	claim := claimSerialized
	if s.d.postgres {
		claim = claimLocked
	}
	watermark, err := s.intakeWatermark(ctx)
	if err != nil {
		return Batch{}, false, fmt.Errorf("store: form batch on %s: %w", chain, err)
	}
	err = s.tx(ctx, func(tx *txn) error {
		now := time.Now()
		var (
			id      int64
			n, prio int
		)
		if newer, err := s.newerBatch(ctx, tx, chain, seen); err != nil || newer {
			return cmp.Or(err, errNothingPending)
		}
		// Outbox rows waiting (retried anchors) go first, then the lanes.
		rows, err := hasOutboxPending(ctx, tx, chain)
		switch {
		case err != nil:
			return err
		case rows:
			id, n, prio, err = claim(ctx, tx, chain, maxItems, now)
		default:
			id, n, prio, err = s.claimLanes(ctx, tx, chain, maxItems, now, watermark)
		}
		if err != nil || n == 0 {
			return err
		}
		b = Batch{ID: id, Chain: chain, Size: n, Priority: prio, State: BatchFormed, CreatedAt: fromMS(ms(now))}
		ok = true
		return nil
	})
	if errors.Is(err, errNothingPending) {
		return Batch{}, false, nil
	}
	if err != nil {
		return Batch{}, false, fmt.Errorf("store: form batch on %s: %w", chain, err)
	}
	return b, ok, nil
}

// newerBatch reports whether the chain's newest batch was formed after
// seen (never, for a zero seen), holding the chain's lanes so that no
// other node forms one until tx ends.
func (s Anchors) newerBatch(ctx context.Context, tx *txn, chain string, seen time.Time) (bool, error) {
	if seen.IsZero() {
		return false, nil
	}
	if err := s.d.lock(ctx, tx, "lanes:"+chain); err != nil {
		return false, err
	}
	var at int64
	err := tx.QueryRowContext(ctx, `SELECT created_at FROM batches WHERE chain = ? ORDER BY id DESC LIMIT 1`, chain).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && at > ms(seen), err
}

// errNothingPending rolls back a batch that claimed no outbox row.
var errNothingPending = errors.New("nothing pending")

// claimSerialized moves a chain's next pending outbox rows into a new batch
// and returns its id, size and best priority (size 0: nothing pending). It
// relies on the transaction being the only writer (SQLite): the rows it
// counts are the rows it moves.
func claimSerialized(ctx context.Context, tx *txn, chain string, maxItems int, now time.Time) (id int64, n, prio int, err error) {
	// Set-based: the rows are counted, then numbered and moved in one
	// statement each, not one UPDATE per row.
	var minPrio sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), MIN(priority) FROM (SELECT priority FROM outbox
		WHERE chain = ? AND batch_id IS NULL ORDER BY priority, evidence_seq LIMIT ?) AS picked`, chain, maxItems).Scan(&n, &minPrio); err != nil || n == 0 {
		return 0, 0, 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO batches (chain, size, priority, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		chain, n, minPrio.Int64, BatchFormed, ms(now), ms(now))
	if err != nil {
		return 0, 0, 0, err
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, 0, 0, err
	}
	moved, err := tx.ExecContext(ctx, `WITH picked AS (
			SELECT evidence_seq, ROW_NUMBER() OVER (ORDER BY priority, evidence_seq) - 1 AS leaf FROM outbox
			WHERE chain = ? AND batch_id IS NULL ORDER BY priority, evidence_seq LIMIT ?)
		UPDATE outbox SET batch_id = ?, leaf_index = picked.leaf
		FROM picked WHERE outbox.evidence_seq = picked.evidence_seq AND outbox.chain = ?`,
		chain, maxItems, id, chain)
	if err != nil {
		return 0, 0, 0, err
	}
	if m, err := moved.RowsAffected(); err != nil || m != int64(n) {
		return 0, 0, 0, fmt.Errorf("batch %d: moved %d outbox rows, counted %d (%v)", id, m, n, err)
	}
	return id, n, int(minPrio.Int64), nil
}

// claimLocked is claimSerialized for writers that run at once (PostgreSQL):
// the rows are locked as they are picked, and rows another node's
// transaction holds are skipped rather than waited for, so concurrent
// dispatchers take disjoint rows without queueing on each other. The batch
// row comes first (the outbox rows point at it) and is rolled back when
// nothing was left to take.
func claimLocked(ctx context.Context, tx *txn, chain string, maxItems int, now time.Time) (id int64, n, prio int, err error) {
	if err := tx.QueryRowContext(ctx, `INSERT INTO batches (chain, size, priority, state, created_at, updated_at)
		VALUES (?, 0, 0, ?, ?, ?) RETURNING id`, chain, BatchFormed, ms(now), ms(now)).Scan(&id); err != nil {
		return 0, 0, 0, err
	}
	// Window functions cannot sit beside FOR UPDATE: the rows are locked in
	// one step and numbered in the next.
	err = tx.QueryRowContext(ctx, `WITH locked AS (
			SELECT evidence_seq, priority FROM outbox
			WHERE chain = ? AND batch_id IS NULL ORDER BY priority, evidence_seq LIMIT ?
			FOR UPDATE SKIP LOCKED),
		picked AS (
			SELECT evidence_seq, ROW_NUMBER() OVER (ORDER BY priority, evidence_seq) - 1 AS leaf FROM locked),
		moved AS (
			UPDATE outbox SET batch_id = ?, leaf_index = picked.leaf
			FROM picked WHERE outbox.evidence_seq = picked.evidence_seq AND outbox.chain = ?
			RETURNING outbox.priority)
		SELECT COUNT(*), COALESCE(MIN(priority), 0) FROM moved`,
		chain, maxItems, id, chain).Scan(&n, &prio)
	if err != nil {
		return 0, 0, 0, err
	}
	if n == 0 {
		return 0, 0, 0, errNothingPending
	}
	_, err = tx.ExecContext(ctx, `UPDATE batches SET size = ?, priority = ? WHERE id = ?`, n, prio, id)
	return id, n, prio, err
}

// FormedBatches returns batches formed but whose workflow was not started yet
// (the dispatcher crashed between the two steps, or Temporal was down).
func (s Anchors) FormedBatches(ctx context.Context) ([]Batch, error) {
	return s.batches(ctx, `state = ? ORDER BY priority, id`, BatchFormed)
}

// MarkBatchStarted records that the batch's workflow exists.
func (s Anchors) MarkBatchStarted(ctx context.Context, id int64) error {
	return s.exec(ctx, `UPDATE batches SET state = ?, updated_at = ? WHERE id = ? AND state = ?`, BatchStarted, ms(time.Now()), id, BatchFormed)
}

// GetBatch returns one batch or ErrNotFound.
func (s Anchors) GetBatch(ctx context.Context, id int64) (Batch, error) {
	bs, err := s.batches(ctx, `id = ?`, id)
	if err != nil {
		return Batch{}, err
	}
	if len(bs) == 0 {
		return Batch{}, fmt.Errorf("batch %d: %w", id, ErrNotFound)
	}
	return bs[0], nil
}

func (s Anchors) batches(ctx context.Context, where string, args ...any) ([]Batch, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, chain, size, priority, state, root, COALESCE(tx_ref, ''), COALESCE(block, 0), COALESCE(block_time, 0),
		attempts, last_error, created_at FROM batches WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: batches: %w", err)
	}
	defer rows.Close()
	var out []Batch
	for rows.Next() {
		var (
			b       Batch
			root    []byte
			bt, crt int64
		)
		if err := rows.Scan(&b.ID, &b.Chain, &b.Size, &b.Priority, &b.State, &root, &b.TxRef, &b.Block, &bt, &b.Attempts, &b.LastError, &crt); err != nil {
			return nil, err
		}
		copy(b.Root[:], root)
		b.BlockTime, b.CreatedAt = fromMS(bt), fromMS(crt)
		out = append(out, b)
	}
	return out, rows.Err()
}

// BatchDigests returns the digests of a batch's evidence in leaf order.
func (s Anchors) BatchDigests(ctx context.Context, id int64) ([][]byte, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT e.digest FROM `+batchMembers("?1")+` m JOIN evidence e ON e.seq = m.seq
		ORDER BY m.leaf`, id)
	if err != nil {
		return nil, fmt.Errorf("store: digests of batch %d: %w", id, err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// JournaledTx is a signed transaction built for a batch, journaled before it
// is broadcast so that a retried submit rebroadcasts it.
type JournaledTx struct {
	BatchID   int64
	Chain     string
	Ref       string          // the chain's transaction id
	Raw       []byte          // the signed transaction, as broadcast
	Meta      json.RawMessage // the chain adapter's own (nonce, fees, ...); stored as text
	CreatedAt time.Time
}

// Transactions returns the transactions journaled for a batch, oldest first.
func (s Anchors) Transactions(ctx context.Context, batchID int64) ([]JournaledTx, error) {
	out, err := s.journaled(ctx, `WHERE t.batch_id = ? ORDER BY t.seq`, batchID)
	if err != nil {
		return nil, fmt.Errorf("store: transactions of batch %d: %w", batchID, err)
	}
	return out, nil
}

// UnconfirmedTransactions returns the transactions journaled on chain for
// batches that are not confirmed (dead-lettered ones included), oldest first.
func (s Anchors) UnconfirmedTransactions(ctx context.Context, chain string) ([]JournaledTx, error) {
	out, err := s.journaled(ctx, `JOIN batches b ON b.id = t.batch_id
		WHERE b.state IN (?, ?, ?, ?) AND b.chain = ? AND t.chain = ? ORDER BY t.created_at, t.batch_id, t.seq`,
		BatchFormed, BatchStarted, BatchSubmitted, BatchDeadLetter, chain, chain)
	if err != nil {
		return nil, fmt.Errorf("store: unconfirmed transactions on %s: %w", chain, err)
	}
	return out, nil
}

func (s Anchors) journaled(ctx context.Context, rest string, args ...any) ([]JournaledTx, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT t.batch_id, t.chain, t.ref, t.raw, COALESCE(t.meta, ''), t.created_at FROM tx_refs t `+rest, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []JournaledTx
	for rows.Next() {
		var (
			r    JournaledTx
			meta string
			crt  int64
		)
		if err := rows.Scan(&r.BatchID, &r.Chain, &r.Ref, &r.Raw, &meta, &crt); err != nil {
			return nil, err
		}
		if meta != "" {
			r.Meta = []byte(meta)
		}
		r.CreatedAt = fromMS(crt)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SaveTransaction journals a transaction before it is broadcast.
func (s Anchors) SaveTransaction(ctx context.Context, r JournaledTx) error {
	var meta any
	if len(r.Meta) > 0 {
		meta = string(r.Meta)
	}
	return s.exec(ctx, `INSERT INTO tx_refs (batch_id, seq, chain, ref, raw, meta, created_at)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM tx_refs WHERE batch_id = ?), ?, ?, ?, ?, ?)`,
		r.BatchID, r.BatchID, r.Chain, r.Ref, r.Raw, meta, ms(r.CreatedAt))
}

// MarkSubmitted records the batch's root and transaction: its evidence are
// submitted from then on (their status is read from their batches).
// Re-marking an already submitted batch updates the ref.
func (s Anchors) MarkSubmitted(ctx context.Context, id int64, root [32]byte, ref string) error {
	err := s.exec(ctx, `UPDATE batches SET state = ?, root = ?, tx_ref = ?, updated_at = ?
		WHERE id = ? AND state IN (?, ?, ?)`, BatchSubmitted, root[:], ref, ms(time.Now()), id, BatchFormed, BatchStarted, BatchSubmitted)
	if err != nil {
		return fmt.Errorf("store: mark batch %d submitted: %w", id, err)
	}
	s.notify()
	return nil
}

// RecordAttempt notes a failed attempt on a batch, so users see attempts and
// the last error on its evidence while Temporal retries.
func (s Anchors) RecordAttempt(ctx context.Context, id int64, attempts int, lastErr string) error {
	return s.exec(ctx, `UPDATE batches SET attempts = ?, last_error = ?, updated_at = ? WHERE id = ?`, attempts, lastErr, ms(time.Now()), id)
}

// Confirmation is where a batch's transaction became final.
type Confirmation struct {
	TxRef     string
	Block     uint64
	BlockTime time.Time
	Network   string // CAIP-2 id of the chain (eip155:42793, solana:…)
	BlockHash string
	Finality  string // "finalized", "confirmed" or "confirmations:N"
	Account   string // the account that sent the transaction
}

// ConfirmBatch marks the batch confirmed where its transaction became final:
// one row, whatever the batch's size. Its evidence's audit paths are not
// stored: a receipt computes its path from the batch's leaves when it is
// read (batchTree). It is a no-op for a batch already confirmed or
// dead-lettered.
func (s Anchors) ConfirmBatch(ctx context.Context, id int64, c Confirmation) error {
	err := s.tx(ctx, func(tx *txn) error {
		return s.settleBatch(ctx, tx, id, BatchConfirmed, EventEvidenceConfirmed, `tx_ref = ?, block = ?, block_time = ?, network = ?, block_hash = ?, finality = ?, account = ?`,
			c.TxRef, c.Block, ms(c.BlockTime), c.Network, c.BlockHash, c.Finality, c.Account)
	})
	if err != nil {
		return fmt.Errorf("store: confirm batch %d: %w", id, err)
	}
	return nil
}

// DeadLetterBatch marks a batch dead-lettered with the error that ended it.
// Its evidence can be re-driven with RetryEvidence.
func (s Anchors) DeadLetterBatch(ctx context.Context, id int64, lastErr string) error {
	err := s.tx(ctx, func(tx *txn) error {
		return s.settleBatch(ctx, tx, id, BatchDeadLetter, EventEvidenceDeadLettered, `last_error = ?`, lastErr)
	})
	if err != nil {
		return fmt.Errorf("store: dead-letter batch %d: %w", id, err)
	}
	return nil
}

// settleBatch moves an unsettled batch to its final state, setting the
// columns in set, and records typ for each of its evidence whose status the
// move changes (webhooks). With nobody subscribed to typ, that is one
// query more than the update.
func (s Anchors) settleBatch(ctx context.Context, tx *txn, id int64, state, typ, set string, args ...any) error {
	subs, err := subscribers(ctx, tx, typ)
	if err != nil {
		return err
	}
	if len(subs) > 0 {
		// Two batches of one evidence settling at once on PostgreSQL would
		// each see the other unsettled and announce nothing: the evidence
		// rows are locked first, in intake order.
		if err := s.d.lockEvidence(ctx, tx, `seq IN (SELECT m.seq FROM `+batchMembers("?1")+` m)`, id); err != nil {
			return err
		}
	}
	args = append(args, ms(time.Now()), id, BatchConfirmed, BatchDeadLetter)
	res, err := tx.ExecContext(ctx, `UPDATE batches SET state = '`+state+`', `+set+`, updated_at = ? WHERE id = ? AND state <> ? AND state <> ?`, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 || len(subs) == 0 {
		return nil
	}
	return evidenceEvents(ctx, tx, subs, id, state, typ)
}
