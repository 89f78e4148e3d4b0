package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LastBatch is when the chain's newest batch was formed and how many
// evidence it took (zero time: never), whichever node formed it.
func (s Anchors) LastBatch(ctx context.Context, chain string) (time.Time, int, error) {
	var at, size int64
	err := s.r.QueryRowContext(ctx, `SELECT created_at, size FROM batches WHERE chain = ? ORDER BY id DESC LIMIT 1`, chain).Scan(&at, &size)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, 0, nil
	}
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("store: last batch on %s: %w", chain, err)
	}
	return fromMS(at), int(size), nil
}
