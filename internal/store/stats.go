package store

import (
	"context"
	"fmt"
)

// Stats owns no table: it reads counts and timings across the others for
// metrics (stats.go), progress (progress.go) and the benchmarks
// (timings.go).
type Stats struct{ *db }

// The counts behind keeper's /metrics gauges, read at scrape time so that
// every API node reports the same numbers. Each reads an index or a small
// table, never the whole evidence history.

// BatchCount is how many of a chain's batches are in one unfinished state,
// and how much evidence they hold.
type BatchCount struct {
	Chain    string
	State    string // formed, started or submitted
	Batches  int
	Evidence int
}

// UnfinishedBatches counts the batches not yet confirmed or dead-lettered,
// by chain and state.
func (s Stats) UnfinishedBatches(ctx context.Context) ([]BatchCount, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT chain, state, COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM batches
		WHERE state IN ('`+BatchFormed+`', '`+BatchStarted+`', '`+BatchSubmitted+`') GROUP BY chain, state`)
	if err != nil {
		return nil, fmt.Errorf("store: unfinished batches: %w", err)
	}
	defer rows.Close()
	var out []BatchCount
	for rows.Next() {
		var c BatchCount
		if err := rows.Scan(&c.Chain, &c.State, &c.Batches, &c.Evidence); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// EpochCounts counts epochs by status.
func (s Stats) EpochCounts(ctx context.Context) (map[string]int, error) {
	return countByStatus[string](ctx, s.r, "epoch counts", `SELECT status, COUNT(*) FROM epochs GROUP BY status`)
}

// countByStatus reads the (status, count) rows of q, a query grouping by
// status, into a map. what names the count in errors ("epoch counts").
func countByStatus[S ~string](ctx context.Context, p *pool, what, q string, args ...any) (map[S]int, error) {
	rows, err := p.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	out := map[S]int{}
	for rows.Next() {
		var (
			st string
			n  int
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[S(st)] = n
	}
	return out, rows.Err()
}

// BackfillCount is how many (wallet, network) backfill items of a network
// are in one status, and how far their scans got.
type BackfillCount struct {
	Network string
	Status  SyncState
	Items   int
	Scanned uint64 // blocks or signatures scanned
	Total   uint64 // of this many (items whose total is not known yet add 0)
}

// BackfillCounts counts backfill items by network and status.
func (s Stats) BackfillCounts(ctx context.Context) ([]BackfillCount, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT network, status, COUNT(*), CAST(COALESCE(SUM(scanned), 0) AS BIGINT), CAST(COALESCE(SUM(total), 0) AS BIGINT)
		FROM sync_status GROUP BY network, status`)
	if err != nil {
		return nil, fmt.Errorf("store: backfill counts: %w", err)
	}
	defer rows.Close()
	var out []BackfillCount
	for rows.Next() {
		var (
			c  BackfillCount
			st string
		)
		if err := rows.Scan(&c.Network, &st, &c.Items, &c.Scanned, &c.Total); err != nil {
			return nil, err
		}
		c.Status = SyncState(st)
		out = append(out, c)
	}
	return out, rows.Err()
}
