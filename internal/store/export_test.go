package store

import (
	"context"
	"time"
)

// Columns lists each table's columns in name order, for the test that
// holds the two schemas to the same tables and columns.
func Columns(ctx context.Context, s *Store) (map[string][]string, error) {
	q := `SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY 1, 2`
	if s.d.postgres {
		q = `SELECT table_name, column_name FROM information_schema.columns
			WHERE table_schema = current_schema() ORDER BY 1, 2`
	}
	rows, err := s.r.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		out[table] = append(out[table], col)
	}
	return out, rows.Err()
}

// OpenAtVersion opens the store at where (an SQLite path or a PostgreSQL
// URL) with only its first version migrations applied: the schema an older
// keeper left, for tests that carry its data over.
func OpenAtVersion(ctx context.Context, where string, version int) (*Store, error) {
	full, open := sqliteDialect, func(d *dialect) (*Store, error) { return openSQLite(where, d) }
	if IsPostgresURL(where) {
		full, open = postgresDialect, func(d *dialect) (*Store, error) { return openPostgres(ctx, where, d) }
	}
	s, err := open(&dialect{name: full.name, postgres: full.postgres, greatest: full.greatest, anyOf: full.anyOf,
		migrationsTable: full.migrationsTable, migrations: full.migrations[:version]})
	if err != nil {
		return nil, err
	}
	return start(ctx, s)
}

// LatestMigration is the newest migration this build has.
var LatestMigration = len(sqliteMigrations)

// Schema opens the database at where (an SQLite path or a PostgreSQL URL)
// without migrating it and returns each table's columns and the migrations
// schema_migrations records (version → applied_at), for tests that check a
// database was left as it was.
func Schema(ctx context.Context, where string) (map[string][]string, map[int]int64, error) {
	open := func() (*Store, error) { return openSQLite(where, sqliteDialect) }
	if IsPostgresURL(where) {
		open = func() (*Store, error) { return openPostgres(ctx, where, postgresDialect) }
	}
	s, err := open()
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	cols, err := Columns(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	applied := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, nil, err
		}
		applied[v] = at
	}
	return cols, applied, rows.Err()
}

// Exec runs one statement, written with ? placeholders, on the store.
func Exec(ctx context.Context, s *Store, q string, args ...any) error {
	_, err := s.w.ExecContext(ctx, q, args...)
	return err
}

// HeldIntake begins an intake transaction (as commitGroup's) that stores ne
// and stays open until commit is called (or rollback, which does nothing
// after commit): an intake that commits late.
func HeldIntake(ctx context.Context, s *Store, ne NewEvidence) (commit, rollback func() error, err error) {
	ev := Evidence{ID: newEvidenceID(time.Now()), Digest: ne.Digest, Salt: newSalt(), Chains: ne.Chains, Priority: ne.Priority, CreatedAt: time.Now()}
	if err := s.ensureLanes(ctx, []Evidence{ev}); err != nil {
		return nil, nil, err
	}
	tx, err := s.w.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := s.holdIntake(ctx, tx); err != nil {
		tx.tx.Rollback()
		return nil, nil, err
	}
	ins, err := s.prepareInserts(tx)
	if err != nil {
		tx.tx.Rollback()
		return nil, nil, err
	}
	defer ins.close()
	if _, _, err := s.insertOne(tx, ins, ev); err != nil {
		tx.tx.Rollback()
		return nil, nil, err
	}
	return tx.tx.Commit, tx.tx.Rollback, nil
}

// WaitingAdvisoryLocks counts PostgreSQL sessions waiting for an advisory lock.
func WaitingAdvisoryLocks(ctx context.Context, s *Store) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n)
	return n, err
}

// PreviousSecret reads the rotated-out secret a webhook still keeps.
func PreviousSecret(ctx context.Context, s *Store, id string) (string, error) {
	var prev string
	err := s.r.QueryRowContext(ctx, `SELECT previous_secret FROM webhook_subscriptions WHERE id = ?`, id).Scan(&prev)
	return prev, err
}
