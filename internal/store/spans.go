package store

import (
	"context"
	"strconv"
	"strings"
)

// Batch spans (migration 15). A batch formed from the lanes (claimLanes)
// does not write a row per evidence: per lane it took from, a batch_spans
// row names the range of intake sequences it took, (after_seq, upto_seq].
// The span's members are the lane's evidence in that range, in intake
// order, as the batch's leaves first_leaf onward, less any that has an
// outbox row on the chain (claimLanes leaves those to their rows). A span
// of a lane never overlaps another, so an evidence is in at most one span
// per chain.
//
// Members never change while the span exists: an evidence only gets an
// outbox row on a chain, or goes, when it must move alone (re-driven from
// a dead-lettered batch, archived out of a batch that keeps others), and
// materializeSpans first turns the batch's spans into the outbox rows
// they stand for (same batch, same leaves). So a span's size stays its
// member count.
//
// Readers of a batch's members use batchMembers; readers of an
// evidence's anchors use anchorsOf (or spanOfE): their outbox rows and
// the spans holding them.

// onChainOf is true for evidence e (the alias given) listing the chain in
// column col: onChain with the pattern made in SQL.
func onChainOf(e, col string) string {
	return `(',' || ` + e + `.chains || ',') LIKE ('%,' || REPLACE(REPLACE(REPLACE(` + col + `, '!', '!!'), '%', '!%'), '_', '!_') || ',%') ESCAPE '!'`
}

// spanHolds is true when span s (a batch_spans row) holds evidence e (the
// alias given).
func spanHolds(e string) string {
	return e + `.priority = s.priority AND ` + e + `.seq > s.after_seq AND ` + e + `.seq <= s.upto_seq AND ` + onChainOf(e, "s.chain") + `
		AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.evidence_seq = ` + e + `.seq AND x.chain = s.chain)`
}

// spanMembers is the FROM and WHERE of a query of the members of spans s,
// evidence e (the alias given): `FROM ` + spanMembers("e") + ` AND ...`.
// It goes from the spans to their evidence (SQLite keeps a CROSS JOIN's
// order), one range of evidence_by_lane per span.
func spanMembers(e string) string {
	return `batch_spans s CROSS JOIN evidence ` + e + ` WHERE ` + spanHolds(e)
}

// spanLeaf is the leaf index of member e of span s, in a query that
// numbers a whole span's members (PARTITION by span).
const spanLeaf = `s.first_leaf + ROW_NUMBER() OVER (PARTITION BY s.batch_id, s.priority ORDER BY e.seq) - 1`

// batchMembers is the table (seq, leaf) of batch `batch`'s evidence (batch
// is an expression: a placeholder or a column of the enclosing query),
// from its outbox rows and its spans.
func batchMembers(batch string) string {
	return `(SELECT o.evidence_seq AS seq, o.leaf_index AS leaf FROM outbox o WHERE o.batch_id = ` + batch + `
		UNION ALL SELECT e.seq, ` + spanLeaf + ` FROM ` + spanMembers("e") + ` AND s.batch_id = ` + batch + `)`
}

// batchTop is the largest intake sequence among batch batchID's members
// (0 for a batch without any): per span one probe down evidence_by_lane
// from the span's end to its last member (the span's end itself unless the
// lane's newest evidence was on other chains), and the largest of its
// outbox rows, instead of reading every member.
func batchTop(ctx context.Context, q querier, batchID int64) (int64, error) {
	var top int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(t), 0) FROM (
		SELECT MAX(o.evidence_seq) AS t FROM outbox o WHERE o.batch_id = ?1
		UNION ALL SELECT (SELECT e.seq FROM evidence e WHERE `+spanHolds("e")+` ORDER BY e.seq DESC LIMIT 1)
			FROM batch_spans s WHERE s.batch_id = ?1) AS tops`, batchID).Scan(&top)
	return top, err
}

// An evidence's spans are found from its lanes: laneOfE is true for lane l
// (an anchor_cursors row) of evidence e that has taken e into a span (its
// cursor is past e, and e has no outbox row on its chain), and spanOfE is
// then the id of that span's batch: one probe of batch_spans_by_lane for
// the first span of the lane reaching e. Both are written so that either
// database goes from the lanes (a handful of rows) to the one span, never
// through the spans of a priority.
var laneOfE = `l.priority = e.priority AND l.seq >= e.seq AND ` + onChainOf("e", "l.chain") + `
	AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.evidence_seq = e.seq AND x.chain = l.chain)`

const spanOfE = `(SELECT s.batch_id FROM batch_spans s WHERE s.chain = l.chain AND s.priority = l.priority
	AND s.upto_seq = (SELECT MIN(y.upto_seq) FROM batch_spans y WHERE y.chain = l.chain AND y.priority = l.priority AND y.upto_seq >= e.seq)
	AND s.after_seq < e.seq)`

// spanLeafOfE is the leaf index of evidence e in span s: the span's first
// leaf and the number of its members before e. A span whose every
// sequence in its range is a member (the usual case: a chain's evidence
// not interleaved with another lane's) needs no counting.
var spanLeafOfE = `s.first_leaf + CASE WHEN s.upto_seq - s.after_seq = s.size THEN e.seq - s.after_seq - 1
	ELSE (SELECT COUNT(*) FROM evidence p WHERE ` + spanHolds("p") + ` AND p.seq < e.seq) END`

// anchorsOf is the table (chain, batch_id) of evidence e's anchors that
// are in a batch or wait in the outbox (batch_id NULL): its outbox rows
// and the spans holding it. An anchor of e in neither waits on its lane.
// e is the enclosing query's.
var anchorsOf = `(SELECT o.chain AS chain, o.batch_id AS batch_id FROM outbox o WHERE o.evidence_seq = e.seq
	UNION ALL SELECT k.chain, k.batch_id FROM (SELECT l.chain AS chain, ` + spanOfE + ` AS batch_id FROM anchor_cursors l WHERE ` + laneOfE + `) k
		WHERE k.batch_id IS NOT NULL)`

// anchorsIn is the table (seq, chain, batch_id) of the anchors in a batch
// or waiting in the outbox of the evidence taken in after ?1 up to ?2.
var anchorsIn = `(SELECT o.evidence_seq AS seq, o.chain AS chain, o.batch_id AS batch_id FROM outbox o WHERE o.evidence_seq > ?1 AND o.evidence_seq <= ?2
	UNION ALL SELECT p.seq, s.chain, s.batch_id FROM ` + spanMembers("p") + ` AND s.upto_seq > ?1 AND s.after_seq < ?2 AND p.seq > ?1 AND p.seq <= ?2)`

// materializeSpans turns batches ids' spans into the outbox rows they
// stand for, with the same leaf indices, and deletes them: their members
// can then move alone (re-drive, archiving). A batch without spans is left
// as it is. The members' evidence rows are locked first, in intake order
// (lockEvidence), as a re-drive locks them before it moves their anchors:
// a second transaction materializing a batch waits for the first, then
// finds no span left.
func materializeSpans(ctx context.Context, tx *txn, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	in := make([]string, len(ids))
	for i := range ids {
		in[i] = `SELECT m.seq FROM ` + batchMembers("?"+strconv.Itoa(i+1)) + ` m`
	}
	if err := tx.d.lockEvidence(ctx, tx, `seq IN (`+strings.Join(in, ` UNION ALL `)+`)`, anys(ids)...); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (evidence_seq, chain, priority, batch_id, leaf_index)
			SELECT e.seq, s.chain, s.priority, s.batch_id, `+spanLeaf+`
			FROM `+spanMembers("e")+` AND s.batch_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM batch_spans WHERE batch_id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// batchSize is how many evidence batch id holds now: its outbox rows and
// its spans' members.
func batchSize(ctx context.Context, q querier, id int64) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM outbox WHERE batch_id = ?1)
		+ (SELECT COALESCE(SUM(size), 0) FROM batch_spans WHERE batch_id = ?1)`, id).Scan(&n)
	return n, err
}
