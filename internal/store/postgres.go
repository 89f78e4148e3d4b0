package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/keeperhq/keeper/internal/redact"
)

// postgresConns bounds one node's connections to PostgreSQL: intake's
// committer, the dispatcher, activities and API reads share them.
const postgresConns = 16

// connectTimeout bounds a connection attempt unless the URL's
// connect_timeout says otherwise.
const connectTimeout = 5 * time.Second

// OpenPostgres opens the store in the PostgreSQL database at connURL
// (postgres://user:password@host:port/database?sslmode=…, with any libpq
// setting pgx understands, such as search_path to keep keeper's tables in
// a schema of their own), creating keeper's tables if needed. Several nodes
// may share one database. Errors name the URL without its password.
func OpenPostgres(ctx context.Context, connURL string) (*Store, error) {
	s, err := openPostgres(ctx, connURL, postgresDialect)
	if err != nil {
		return nil, err
	}
	if s, err = start(ctx, s); err != nil {
		return nil, fmt.Errorf("%w (database %s)", err, redact.URL(connURL))
	}
	return s, nil
}

// openPostgres connects to the database at connURL for d, neither migrated
// nor started.
func openPostgres(ctx context.Context, connURL string, d *dialect) (*Store, error) {
	if !IsPostgresURL(connURL) {
		return nil, fmt.Errorf("store: %q is not a postgres:// URL", redact.URL(connURL))
	}
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		// pgx's own message would show a password given as a parameter.
		why := "invalid settings"
		if inner := errors.Unwrap(err); inner != nil {
			why = inner.Error()
		}
		return nil, fmt.Errorf("store: cannot parse %s: %s", redact.URL(connURL), why)
	}
	// A server that does not answer (a host down, packets dropped) fails a
	// connection attempt after connectTimeout unless the URL says otherwise,
	// so a request waiting on one is answered 503 store_unavailable instead
	// of hanging.
	cfg.ConnectTimeout = cmp.Or(cfg.ConnectTimeout, connectTimeout)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(postgresConns)
	db.SetMaxIdleConns(postgresConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := pingWithin(ctx, db, 10*time.Second); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", redact.URL(connURL), err)
	}
	p := &pool{db: db, d: d}
	return newStore(d, p, p), nil
}

func pingWithin(ctx context.Context, db *sql.DB, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return db.PingContext(ctx)
}

// IsPostgresURL reports whether s names a PostgreSQL database.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
