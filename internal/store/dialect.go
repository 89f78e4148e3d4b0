package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// dialect is what differs between the two databases a Store can live in.
// Queries are written once, in the SQL both understand, with ? (or ?N)
// placeholders; the dialect rewrites the placeholders for the driver and
// supplies the few fragments and steps that differ. The schema is the one
// thing written twice (migrations/sqlite, migrations/postgres): column
// types, autoincrement and table options have no common spelling.
type dialect struct {
	name string // "sqlite" or "postgres"

	// postgres: several processes write at once, so batch formation claims
	// outbox rows with row locks and read-then-write transactions take
	// locks. SQLite has one writer, and its write transactions are
	// serialized whole.
	postgres bool

	// greatest is the two-argument maximum: MAX in SQLite, GREATEST in
	// PostgreSQL (where MAX is only an aggregate).
	greatest string
	// anyOf aggregates a boolean to "true for any row": MAX in SQLite (where
	// a comparison is 0 or 1), BOOL_OR in PostgreSQL.
	anyOf string

	migrationsTable string      // DDL of schema_migrations
	migrations      []migration // applied in order, each once (migrate.go)

	bound sync.Map // query as written → query as sent (PostgreSQL)
}

var sqliteDialect = &dialect{
	name: "sqlite", greatest: "MAX", anyOf: "MAX",
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
	migrations:      sqliteMigrations,
}

var postgresDialect = &dialect{
	name: "postgres", postgres: true, greatest: "GREATEST", anyOf: "BOOL_OR",
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`,
	migrations:      postgresMigrations,
}

// bind returns q with its placeholders as the driver wants them: SQLite
// takes ? and ?N as written; PostgreSQL wants $N.
func (d *dialect) bind(q string) string {
	if !d.postgres {
		return q
	}
	if b, ok := d.bound.Load(q); ok {
		return b.(string)
	}
	b := dollarPlaceholders(q)
	d.bound.Store(q, b)
	return b
}

// dollarPlaceholders numbers each ? as $1, $2, … and turns ?N into $N,
// leaving string literals alone.
func dollarPlaceholders(q string) string {
	var (
		b       strings.Builder
		n       int
		literal bool
	)
	b.Grow(len(q) + 16)
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			literal = !literal
		}
		if c != '?' || literal {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		b.WriteByte('$')
		if j > i+1 {
			b.WriteString(q[i+1 : j])
		} else {
			n++
			b.WriteString(strconv.Itoa(n))
		}
		i = j - 1
	}
	return b.String()
}

// indexedBy pins a query to an index: SQLite's planner needs it for the
// loose index scan of PendingUpTo; PostgreSQL picks the index itself.
func (d *dialect) indexedBy(index string) string {
	if d.postgres {
		return ""
	}
	return " INDEXED BY " + index
}

// lock serializes, until tx ends, the transactions that lock the same key:
// those that read rows and then write what they read decided (the in-flight
// epoch limit, a wallet's sync rows). SQLite's write transactions are
// already serialized.
func (d *dialect) lock(ctx context.Context, tx *txn, key string) error {
	if !d.postgres {
		return nil
	}
	// The schema is part of the key: two deployments in one database do not
	// wait on each other.
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':' || ?))`, key)
	return err
}

// lockEvidence locks the evidence rows matched by where, in intake order,
// before a transaction recomputes or rewrites them from their outbox rows.
// Without it, two PostgreSQL transactions moving one evidence's anchors on
// two chains would each see the other's outbox change uncommitted and leave
// a stale status; the fixed order keeps them from deadlocking. SQLite's
// write transactions are already serialized.
func (d *dialect) lockEvidence(ctx context.Context, tx *txn, where string, args ...any) error {
	if !d.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT seq FROM evidence WHERE `+where+` ORDER BY seq FOR UPDATE`, args...)
	return err
}

// returning is an INSERT that reports the new row's col: SQLite hands it to
// LastInsertId, PostgreSQL needs RETURNING.
func (d *dialect) returning(insert, col string) string {
	if d.postgres {
		return insert + " RETURNING " + col
	}
	return insert
}

// insertedID runs a prepared INSERT made with returning and gives the new
// row's id.
func (d *dialect) insertedID(ctx context.Context, stmt *sql.Stmt, args ...any) (int64, error) {
	if d.postgres {
		var id int64
		err := stmt.QueryRowContext(ctx, args...).Scan(&id)
		return id, err
	}
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// pool is a database/sql pool whose queries are written with ? placeholders.
type pool struct {
	db *sql.DB
	d  *dialect

	stmts sync.Map // bound query -> *sql.Stmt prepared on db (prepare)
}

// prepare prepares qs on the pool, once, for txn.Stmt: SQLite compiles a
// query anew each time it is run unprepared, which was an eighth of
// intake's CPU at 1,000 requests a second (docs/benchmarks.md, 2026-11-27).
// Call it outside any transaction: on SQLite's one writer a transaction
// holds the only connection.
func (p *pool) prepare(ctx context.Context, qs ...string) error {
	for _, q := range qs {
		q = p.d.bind(q)
		if _, ok := p.stmts.Load(q); ok {
			continue
		}
		st, err := p.db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("store: prepare %q: %w", q, err)
		}
		p.stmts.Store(q, st)
	}
	return nil
}

func (p *pool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return p.db.ExecContext(ctx, p.d.bind(q), args...)
}

func (p *pool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.db.QueryContext(ctx, p.d.bind(q), args...)
}

func (p *pool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return p.db.QueryRowContext(ctx, p.d.bind(q), args...)
}

func (p *pool) begin(ctx context.Context) (*txn, error) {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &txn{tx: tx, d: p.d, p: p}, nil
}

// snapshot begins a read-only transaction whose queries all see one state of
// the database: on SQLite a deferred transaction on a reader (its snapshot
// is taken at its first read, WAL mode), on PostgreSQL REPEATABLE READ.
// Roll it back when done.
func (p *pool) snapshot(ctx context.Context) (*txn, error) {
	var opts *sql.TxOptions
	if p.d.postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{tx: tx, d: p.d, p: p}, nil
}

// txn is a transaction whose queries are written with ? placeholders.
type txn struct {
	tx *sql.Tx
	d  *dialect
	p  *pool // the pool it began on
}

// Stmt is q for this transaction: the statement prepared on the pool
// (pool.prepare) when there is one, reused as it is on the connection it
// was prepared on (SQLite's one writer); else q prepared now. It is closed
// with the transaction.
func (t *txn) Stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	q = t.d.bind(q)
	if st, ok := t.p.stmts.Load(q); ok {
		return t.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	return t.tx.PrepareContext(ctx, q)
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.d.bind(q), args...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.d.bind(q), args...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.d.bind(q), args...)
}

func (t *txn) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, t.d.bind(q))
}
