package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keeperhq/keeper/merkle"
)

// Status is where an evidence (or one of its per-chain anchors) stands.
type Status string

// The evidence lifecycle. An evidence asking for several chains is confirmed
// when every chain has confirmed and dead-lettered when any chain has.
const (
	StatusPending    Status = "pending"
	StatusBatched    Status = "batched"
	StatusSubmitted  Status = "submitted"
	StatusConfirmed  Status = "confirmed"
	StatusDeadLetter Status = "dead_letter"
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusBatched, StatusSubmitted, StatusConfirmed, StatusDeadLetter:
		return true
	}
	return false
}

// NewEvidence is what intake hands to the store.
type NewEvidence struct {
	Digest         [32]byte
	Chains         []string // sorted, unique, non-empty
	Priority       int      // 1 (highest) … 10
	IdempotencyKey string
	Metadata       json.RawMessage
}

// Evidence is one stored evidence with its per-chain anchors.
type Evidence struct {
	ID             string
	Digest         [32]byte
	Salt           []byte // 16 random bytes made at intake; nil for evidence stored before salts
	Chains         []string
	Priority       int
	IdempotencyKey string
	Metadata       json.RawMessage
	Status         Status
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Anchors        []AnchorState
	seq            int64
}

// AnchorState is one chain's part of an evidence: its batch and, once
// confirmed, everything a receipt needs.
type AnchorState struct {
	Chain     string
	Status    Status
	BatchID   int64
	LeafIndex int
	TreeSize  int
	Root      [32]byte
	TxRef     string
	Block     uint64
	BlockTime time.Time
	Network   string // CAIP-2 id of the chain the anchor is on
	BlockHash string // the block's hash as the chain spells it
	Finality  string // the rule it was confirmed final by ("finalized", "confirmations:N")
	LogSize   uint64 // the log checkpoint the batch's anchor commits to (0: its own root, before the log)
	Account   string // the account that sent the anchor
}

// InsertEvidence stores an evidence and its outbox rows in one transaction,
// which it may share with other evidence inserted at the same moment (an
// evidence is stored whole or not at all either way). With an idempotency key
// that was seen before, it returns the stored evidence and created=false, and
// stores nothing.
func (s Intake) InsertEvidence(ctx context.Context, ne NewEvidence) (Evidence, bool, error) {
	if ne.IdempotencyKey != "" {
		if ev, err := s.evidenceByKey(ctx, s.r, ne.IdempotencyKey); err == nil {
			return ev, false, nil
		} else if !errors.Is(err, ErrNotFound) {
			return Evidence{}, false, err
		}
	}
	now := fromMS(ms(time.Now()))
	ev := Evidence{
		ID: newEvidenceID(now), Digest: ne.Digest, Salt: newSalt(), Chains: ne.Chains, Priority: ne.Priority,
		IdempotencyKey: ne.IdempotencyKey, Metadata: ne.Metadata, Status: StatusPending,
		CreatedAt: now, UpdatedAt: now,
	}
	// Concurrent inserts are committed together (see committer).
	return s.enqueue(ctx, ev)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

const evidenceCols = `seq, id, digest, salt, chains, priority, COALESCE(idempotency_key, ''), COALESCE(metadata, ''), created_at, updated_at`

// scanEvidence reads an evidence row; its status, attempts and last error
// come from its anchors (loadAnchors).
func scanEvidence(row interface{ Scan(...any) error }) (Evidence, error) {
	var (
		ev           Evidence
		digest       []byte
		chainList    string
		meta         string
		created, upd int64
	)
	err := row.Scan(&ev.seq, &ev.ID, &digest, &ev.Salt, &chainList, &ev.Priority, &ev.IdempotencyKey, &meta, &created, &upd)
	if errors.Is(err, sql.ErrNoRows) {
		return Evidence{}, ErrNotFound
	}
	if err != nil {
		return Evidence{}, err
	}
	copy(ev.Digest[:], digest)
	ev.Chains = strings.Split(chainList, ",")
	if meta != "" {
		ev.Metadata = json.RawMessage(meta)
	}
	ev.CreatedAt, ev.UpdatedAt = fromMS(created), fromMS(upd)
	return ev, nil
}

func (s Intake) evidenceByKey(ctx context.Context, q querier, key string) (Evidence, error) {
	ev, err := scanEvidence(q.QueryRowContext(ctx, `SELECT `+evidenceCols+` FROM evidence WHERE idempotency_key = ?`, key))
	if err != nil {
		return Evidence{}, err
	}
	return ev, s.loadAnchors(ctx, q, &ev)
}

// EvidenceByKey returns the evidence stored under an idempotency key, or ErrNotFound.
func (s Intake) EvidenceByKey(ctx context.Context, key string) (Evidence, error) {
	return s.evidenceByKey(ctx, s.r, key)
}

// GetEvidence returns one evidence with its anchors, or ErrNotFound.
func (s Intake) GetEvidence(ctx context.Context, id string) (Evidence, error) {
	ev, err := scanEvidence(s.r.QueryRowContext(ctx, `SELECT `+evidenceCols+` FROM evidence WHERE id = ?`, id))
	if err != nil {
		return Evidence{}, err
	}
	return ev, s.loadAnchors(ctx, s.r, &ev)
}

// anchorStatus is the status of an anchor in a batch in state batchState
// ("" for no batch yet).
func anchorStatus(batchState string) Status {
	switch batchState {
	case "":
		return StatusPending
	case BatchFormed, BatchStarted:
		return StatusBatched
	}
	return Status(batchState) // submitted, confirmed, dead_letter
}

// evidenceStatus is an evidence's status from its anchors': dead-lettered
// if any is, else the least advanced of them.
func evidenceStatus(anchors []AnchorState) Status {
	st := StatusConfirmed
	for _, a := range anchors {
		if statusRank(a.Status) < statusRank(st) {
			st = a.Status
		}
	}
	return st
}

// statusRank orders statuses for evidenceStatus: dead_letter first, then
// from the least advanced to confirmed.
func statusRank(s Status) int {
	switch s {
	case StatusDeadLetter:
		return 0
	case StatusPending:
		return 1
	case StatusBatched:
		return 2
	case StatusSubmitted:
		return 3
	}
	return 4
}

// loadAnchors reads an evidence's anchors from its outbox rows, the spans
// holding it (its leaf index: the span's first leaf and the span's members
// before it) and their batches, and derives from them what is stored nowhere else: the
// evidence's status, attempts, last error and last change. Proofs are not
// the store's: receipt.Build computes them from the log's stored hashes
// and the batches' leaves (Inclusion, Consistency, BatchLeafHashes).
// Maintenance reads anchors too (retention), so this is the shared db's.
func (s *db) loadAnchors(ctx context.Context, q querier, ev *Evidence) error {
	rows, err := q.QueryContext(ctx, `SELECT a.chain, COALESCE(a.batch_id, 0), COALESCE(a.leaf, 0), COALESCE(b.state, ''),
			COALESCE(b.size, 0), b.root, COALESCE(b.tx_ref, ''), COALESCE(b.block, 0), COALESCE(b.block_time, 0),
			COALESCE(b.network, ''), COALESCE(b.block_hash, ''), COALESCE(b.finality, ''),
			COALESCE(b.attempts, 0), COALESCE(b.last_error, ''), COALESCE(b.updated_at, 0), COALESCE(b.log_size, 0), COALESCE(b.account, '')
		FROM (SELECT o.chain AS chain, o.batch_id AS batch_id, o.leaf_index AS leaf FROM outbox o WHERE o.evidence_seq = ?1
			UNION ALL SELECT k.chain, k.batch_id,
				(SELECT `+spanLeafOfE+` FROM batch_spans s, evidence e WHERE s.batch_id = k.batch_id AND s.priority = e.priority AND e.seq = ?1)
			FROM (SELECT l.chain AS chain, `+spanOfE+` AS batch_id FROM evidence e, anchor_cursors l WHERE e.seq = ?1 AND `+laneOfE+`) k
			WHERE k.batch_id IS NOT NULL) a
		LEFT JOIN batches b ON b.id = a.batch_id ORDER BY a.chain`, ev.seq)
	if err != nil {
		return err
	}
	ev.Anchors = nil
	var errorAt int64
	for rows.Next() {
		var (
			a              AnchorState
			state, lastErr string
			root           []byte
			bt, upd        int64
			attempts       int
		)
		if err := rows.Scan(&a.Chain, &a.BatchID, &a.LeafIndex, &state, &a.TreeSize, &root, &a.TxRef, &a.Block, &bt,
			&a.Network, &a.BlockHash, &a.Finality, &attempts, &lastErr, &upd, &a.LogSize, &a.Account); err != nil {
			rows.Close()
			return err
		}
		a.Status = anchorStatus(state)
		if a.Status == StatusConfirmed {
			copy(a.Root[:], root)
			a.BlockTime = fromMS(bt)
		} else {
			a.Network, a.BlockHash, a.Finality = "", "", ""
			if a.Status == StatusPending || a.Status == StatusDeadLetter {
				a.TxRef, a.Block = "", 0
			}
		}
		ev.Attempts = max(ev.Attempts, attempts)
		if lastErr != "" && upd >= errorAt {
			ev.LastError, errorAt = lastErr, upd
		}
		if t := fromMS(upd); t.After(ev.UpdatedAt) {
			ev.UpdatedAt = t
		}
		ev.Anchors = append(ev.Anchors, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ev.Anchors = withPendingLanes(ev.Anchors, ev.Chains)
	ev.Status = evidenceStatus(ev.Anchors)
	return nil
}

// withPendingLanes adds to anchors, which come from outbox rows and spans in
// chain order, a pending anchor for each of chains without either: its evidence
// waits on that chain's lane (lanes.go).
func withPendingLanes(anchors []AnchorState, chains []string) []AnchorState {
	if len(anchors) == len(chains) {
		return anchors
	}
	out := make([]AnchorState, 0, len(chains))
	for _, c := range chains {
		i := slices.IndexFunc(anchors, func(a AnchorState) bool { return a.Chain == c })
		if i < 0 {
			out = append(out, AnchorState{Chain: c, Status: StatusPending})
			continue
		}
		out = append(out, anchors[i])
	}
	slices.SortFunc(out, func(a, b AnchorState) int { return strings.Compare(a.Chain, b.Chain) })
	return out
}

// ListFilter selects evidence for ListEvidence.
type ListFilter struct {
	Status Status // empty = any
	Limit  int
	Cursor string // from a previous page; empty = first page
}

// ListEvidence returns a page of evidence in intake order and the cursor of
// the next page ("" when this is the last).
func (s Intake) ListEvidence(ctx context.Context, f ListFilter) ([]Evidence, string, error) {
	var (
		cond     string
		condArgs []any
	)
	if f.Status != "" {
		cs, err := cursors(ctx, s.r, "")
		if err != nil {
			return nil, "", fmt.Errorf("store: list evidence: %w", err)
		}
		cond, condArgs = s.statusIs(f.Status, cs)
	}
	out, next, err := listPage(ctx, s.r, "list evidence", f.Limit, f.Cursor, func(after int64) (string, []any) {
		q := `SELECT ` + evidenceCols + ` FROM evidence e WHERE seq > ?`
		args := []any{after}
		if f.Status != "" {
			q += ` AND ` + cond
			args = append(append(args, condArgs...), f.Status)
		}
		return q, args
	}, func(rows *sql.Rows) (Evidence, int64, error) {
		ev, err := scanEvidence(rows)
		return ev, ev.seq, err
	})
	if err != nil {
		return nil, "", err
	}
	for i := range out {
		if err := s.loadAnchors(ctx, s.r, &out[i]); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// statusIs is a condition on evidence e that its status (derived from its
// anchors as evidenceStatus does) is the query argument it leaves after its
// own arguments (cs: every lane's cursor). An unfinished status also names
// where such evidence can be, from an index (pending outbox rows and lanes,
// batches by state), so a listing of the few in flight does not derive the
// status of every evidence ever taken in.
func (s Intake) statusIs(st Status, cs []laneCursor) (string, []any) {
	anyOf := s.d.anyOf
	// An anchor with neither an outbox row nor a span waits on its lane:
	// pending.
	derived := `(SELECT CASE
			WHEN ` + anyOf + `(b.state = 'dead_letter') THEN 'dead_letter'
			WHEN ` + anyOf + `(a.batch_id IS NULL) OR COUNT(a.chain) < ` + chainCount + ` THEN 'pending'
			WHEN ` + anyOf + `(b.state IN ('formed', 'started')) THEN 'batched'
			WHEN ` + anyOf + `(b.state = 'submitted') THEN 'submitted'
			ELSE 'confirmed' END
		FROM ` + anchorsOf + ` a LEFT JOIN batches b ON b.id = a.batch_id) = ?`
	inBatches := func(states string) string {
		return `e.seq IN (SELECT o.evidence_seq FROM batches b JOIN outbox o ON o.batch_id = b.id WHERE b.state IN (` + states + `)
			UNION ALL SELECT p.seq FROM ` + spanMembers("p") + ` AND s.batch_id IN (SELECT b.id FROM batches b WHERE b.state IN (` + states + `))) AND `
	}
	switch st {
	case StatusPending:
		tail, args := pendingTail(cs)
		return `(e.seq IN (SELECT evidence_seq FROM outbox WHERE batch_id IS NULL) OR ` + tail + `) AND ` + derived, args
	case StatusBatched:
		return inBatches(`'formed', 'started'`) + derived, nil
	case StatusSubmitted:
		return inBatches(`'submitted'`) + derived, nil
	case StatusDeadLetter:
		return inBatches(`'dead_letter'`) + derived, nil
	}
	return derived, nil
}

// PendingCount is the number of evidence not yet in any batch on some chain:
// those waiting on a lane, and those with an outbox row waiting.
func (s Intake) PendingCount(ctx context.Context) (int, error) {
	// The cursors and the rows are read in one snapshot: with cursors read
	// before a batch moved them and rows read after, evidence just batched
	// would still count as pending.
	tx, err := s.r.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.tx.Rollback()
	cs, err := cursors(ctx, tx, "")
	if err != nil {
		return 0, err
	}
	tail, args := pendingTail(cs)
	var n int
	err = tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM evidence e WHERE `+tail+`)
		+ (SELECT COUNT(DISTINCT o.evidence_seq) FROM outbox o JOIN evidence e ON e.seq = o.evidence_seq
			WHERE o.batch_id IS NULL AND NOT `+tail+`)`, append(args, args...)...).Scan(&n)
	return n, err
}

// RetryEvidence puts a dead-lettered evidence's failed anchors back in the
// outbox (their rows wait for a batch again; a span batch's members get
// their rows first, materializeSpans), with the attempt count reset.
func (s Intake) RetryEvidence(ctx context.Context, id string) (Evidence, error) {
	ev, _, err := s.RedriveEvidence(ctx, id)
	return ev, err
}

// RedriveEvidence is RetryEvidence that also says on which chains it put
// an anchor back.
func (s Intake) RedriveEvidence(ctx context.Context, id string) (Evidence, []string, error) {
	var chains []string
	err := s.tx(ctx, func(tx *txn) error {
		if err := materializeDeadSpans(ctx, tx, id); err != nil {
			return err
		}
		if err := s.d.lockEvidence(ctx, tx, `id = ?`, id); err != nil {
			return err
		}
		ev, err := scanEvidence(tx.QueryRowContext(ctx, `SELECT `+evidenceCols+` FROM evidence WHERE id = ?`, id))
		if err != nil {
			return err
		}
		if err := s.loadAnchors(ctx, tx, &ev); err != nil {
			return err
		}
		if ev.Status != StatusDeadLetter {
			return fmt.Errorf("evidence %s is %s, not dead_letter: %w", id, ev.Status, ErrConflict)
		}
		chains = chains[:0]
		for _, a := range ev.Anchors {
			if a.Status == StatusDeadLetter {
				chains = append(chains, a.Chain)
			}
		}
		_, err = redriveAnchors(ctx, tx, []int64{ev.seq}, 0, "", time.Now())
		return err
	})
	if err != nil {
		return Evidence{}, nil, err
	}
	s.notify()
	ev, err := s.GetEvidence(ctx, id)
	return ev, chains, err
}

func newID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

// newEvidenceID is an evidence id: "ev_" and 24 hex characters, of which the
// first 12 are the time it was made in Unix milliseconds and the rest 6
// random bytes. Ids made later sort after, so the unique index on ids grows
// at its end: a commit of a thousand evidence touches a few of its pages
// instead of one page each at random, which in a large store is a page
// written to SQLite's log (and PostgreSQL's) per evidence.
func newEvidenceID(at time.Time) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "ev_" + hex.EncodeToString(b[:])
}

// SaltSize is the length of an evidence's salt (receipt.SaltSize).
const SaltSize = 16

func newSalt() []byte {
	b := make([]byte, SaltSize)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return b
}

func splitHashes(b []byte) []merkle.Hash {
	out := make([]merkle.Hash, len(b)/32)
	for i := range out {
		copy(out[i][:], b[i*32:])
	}
	return out
}

func joinHashes(hs []merkle.Hash) []byte {
	out := make([]byte, 0, 32*len(hs))
	for _, h := range hs {
		out = append(out, h[:]...)
	}
	return out
}
