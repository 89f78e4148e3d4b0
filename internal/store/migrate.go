package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// The schema, one migration per file and one directory per database:
// migrations/sqlite/NNN_name.sql and migrations/postgres/NNN_name.sql. NNN is
// the version recorded in schema_migrations. Both directories hold the same
// versions under the same names (column types, autoincrement and table
// options have no common spelling, so each is written in its database's SQL),
// and TestBothDatabasesGetTheSameTablesAndColumns holds them to the same
// tables and columns. Never edit a released migration: add the next number,
// in both directories.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migration is one schema version: the SQL that brings a database from the
// version before to this one, applied in one transaction.
type migration struct {
	version int
	name    string // the file's name without its number and .sql
	sql     string
}

// migrationSteps are the migrations that move rows in Go after their SQL,
// in the same transaction: what the two databases' SQL cannot say alike.
var migrationSteps = map[int]func(context.Context, *txn) error{
	16: migrateLogToTiles,
}

var (
	sqliteMigrations   = mustLoadMigrations("migrations/sqlite")
	postgresMigrations = mustLoadMigrations("migrations/postgres")
)

// mustLoadMigrations reads dir's migrations in version order. The files are
// compiled in, so a misnamed or missing one is a bug in this package, found
// by any test that opens a store.
func mustLoadMigrations(dir string) []migration {
	ms, err := loadMigrations(migrationFiles, dir)
	if err != nil {
		panic(err)
	}
	return ms
}

// loadMigrations reads the NNN_name.sql files of dir, which must number
// 1, 2, 3, … without a gap or a repeat.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name, so by version
	if err != nil {
		return nil, fmt.Errorf("store: read migrations %s: %w", dir, err)
	}
	var ms []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 3 || name == "" || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("store: migration %s/%s is not named NNN_name.sql", dir, e.Name())
		}
		if version != len(ms)+1 {
			return nil, fmt.Errorf("store: migration %s/%s: want version %d", dir, e.Name(), len(ms)+1)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s/%s: %w", dir, e.Name(), err)
		}
		ms = append(ms, migration{version: version, name: name, sql: string(b)})
	}
	return ms, nil
}

// NewerSchemaError is why a store does not open when its database records a
// migration this keeper does not have: a newer keeper migrated it, and an
// older one would read and write tables it does not know (docs/production.md,
// "Rolling out a new build"). The database is left as it was.
type NewerSchemaError struct {
	Version int // the newest migration the database records
	Known   int // the newest migration this keeper has
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("store: the database's schema is at migration %d, this keeper knows up to %d: "+
		"a newer keeper migrated it; run that keeper (or newer), or restore a backup taken before the upgrade",
		e.Version, e.Known)
}

// migrate applies the migrations not applied yet, each in a transaction of
// its own that records its version in schema_migrations. Nodes starting
// together on one PostgreSQL database take turns (the migrate lock), so each
// migration is applied once. A database that records a migration newer than
// the last one this keeper has is refused (NewerSchemaError) before anything
// is applied.
func (s *db) migrate(ctx context.Context) error {
	var applied int
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "migrate"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.migrationsTable); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&applied)
	})
	if err != nil {
		return fmt.Errorf("store: schema_migrations: %w", err)
	}
	if known := len(s.d.migrations); applied > known {
		return &NewerSchemaError{Version: applied, Known: known}
	}
	for _, m := range s.d.migrations {
		err := s.tx(ctx, func(tx *txn) error {
			if err := s.d.lock(ctx, tx, "migrate"); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			if step := migrationSteps[m.version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}
