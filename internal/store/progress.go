package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ChainProgress is how anchoring on one chain is getting on, for the ages
// an operator watches instead of dead letters (docs/retries.md, anchor).
type ChainProgress struct {
	// OldestUnconfirmed is when the oldest evidence that waits on the chain
	// (pending, batched or submitted; not dead-lettered) was taken in; zero
	// when none waits.
	OldestUnconfirmed time.Time
	// LastConfirmed is when the chain's last anchor became final (its
	// receipts recorded); zero when none has.
	LastConfirmed time.Time
}

// lastConfirmedWindow is how many of a chain's newest confirmed batches
// LastConfirmed looks at: batches mostly confirm in the order they were
// formed (an EVM signer's nonces force it), so the latest confirmation is
// among the newest ones, found from the index on (state, chain) without
// reading the chain's whole history.
const lastConfirmedWindow = 64

// Progress reads each chain's ChainProgress (chains: those to report,
// each present in the answer).
func (s Stats) Progress(ctx context.Context, chains []string) (map[string]ChainProgress, error) {
	pending, err := Anchors(s).PendingChains(ctx)
	if err != nil {
		return nil, err
	}
	return s.ProgressOf(ctx, chains, pending)
}

// ProgressOf is Progress for a caller that has just read PendingChains
// (the metrics scrape), so the pending lanes are not read twice.
func (s Stats) ProgressOf(ctx context.Context, chains []string, pending map[string]PendingInfo) (map[string]ChainProgress, error) {
	out := make(map[string]ChainProgress, len(chains))
	inFlight, err := s.oldestInFlight(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range chains {
		var p ChainProgress
		p.OldestUnconfirmed = earliest(pending[c].Oldest, inFlight[c])
		var last sql.NullInt64
		err := s.r.QueryRowContext(ctx, `SELECT MAX(updated_at) FROM (SELECT updated_at FROM batches
			WHERE state = ? AND chain = ? ORDER BY id DESC LIMIT `+fmt.Sprint(lastConfirmedWindow)+`) t`, BatchConfirmed, c).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: last confirmed on %s: %w", c, err)
		}
		if last.Valid {
			p.LastConfirmed = fromMS(last.Int64)
		}
		out[c] = p
	}
	return out, nil
}

// oldestInFlight is, by chain, when the oldest evidence in a batch not yet
// confirmed or dead-lettered was taken in. It reads the outbox rows and
// spans of the batches in flight only (from the index on their batch).
func (s Stats) oldestInFlight(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT f.chain, e.created_at FROM
		(SELECT m.chain AS chain, MIN(m.seq) AS oldest FROM (
			SELECT b.chain AS chain, o.evidence_seq AS seq FROM batches b JOIN outbox o ON o.batch_id = b.id
				WHERE b.state IN (?1, ?2, ?3)
			UNION ALL SELECT b.chain, (SELECT MIN(p.seq) FROM evidence p WHERE `+spanHolds("p")+`) FROM batches b JOIN batch_spans s ON s.batch_id = b.id
				WHERE b.state IN (?1, ?2, ?3)) m
			GROUP BY m.chain) f
		JOIN evidence e ON e.seq = f.oldest`, BatchFormed, BatchStarted, BatchSubmitted)
	if err != nil {
		return nil, fmt.Errorf("store: oldest in flight: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			c  string
			at int64
		)
		if err := rows.Scan(&c, &at); err != nil {
			return nil, err
		}
		out[c] = fromMS(at)
	}
	return out, rows.Err()
}

// earliest is the earlier of two times, a zero one counting as none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
