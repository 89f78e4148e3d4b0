package store

import (
	"context"
	"fmt"
)

// Size is how many bytes keeper's records take in their database, tables
// and indexes alike, so that `keeper bench` can say what each evidence
// costs in storage.
//
// SQLite: the bytes of the pages keeper.db uses, (page_count −
// freelist_count) × page_size. A passive checkpoint first copies what the
// WAL holds into the file, so the number is the file's own and does not
// depend on the WAL (page_count counts the committed database either way).
// Free pages, kept for reuse, are not counted.
//
// PostgreSQL: the sum of pg_total_relation_size (table, indexes and
// TOAST) over the tables in the store's schema (current_schema(): public,
// or the one search_path names). Dead rows not yet vacuumed count, as they
// take the same disk.
func (s Maintenance) Size(ctx context.Context) (int64, error) {
	var n int64
	if s.d.postgres {
		err := s.r.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT)
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'p')`).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("store: size of keeper's tables: %w", err)
		}
		return n, nil
	}
	// The writer: a checkpoint needs a connection that may write.
	var busy, walPages, moved int64
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &walPages, &moved); err != nil {
		return 0, fmt.Errorf("store: checkpoint before measuring keeper.db: %w", err)
	}
	err := s.w.QueryRowContext(ctx, `SELECT (p.page_count - f.freelist_count) * s.page_size
		FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: size of keeper.db: %w", err)
	}
	return n, nil
}
