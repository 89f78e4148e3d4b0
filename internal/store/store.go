// Package store keeps keeper's own records: evidence and its outbox, batches,
// the transactions signed for them, and receipts. By default it is a SQLite
// file in WAL mode with one writer connection and a small pool of readers, so
// intake writes never wait on a reader and readers never see a half-written
// batch. Several API nodes share one PostgreSQL database instead
// (OpenPostgres): the same queries, with batch formation serialized per
// chain and bounded by what every node's intake has committed (lanes.go),
// so no two nodes batch the same evidence.
//
// Store is one part per feature (Intake, Anchors, Waits, Log, Epochs,
// Wallets, Webhooks, Maintenance, Stats), each declared with the records it
// owns at the top of its file; read one part without the others. The schema
// is in migrations/, one numbered .sql file per version and database
// (migrate.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// Errors callers can test for with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Store is keeper's record store. It is safe for concurrent use, including by
// several processes on the same file or PostgreSQL database.
//
// It is made of parts, one per feature, each owning its tables and the
// methods that read and write them, in its own files. The parts share one
// database handle (db), so a method of one part and a method of another see
// the same transactions and caches; Store embeds them all, so
// st.InsertEvidence and st.FormBatch are called on the Store as one type.
type Store struct {
	*db

	Intake      // evidence taken in, read back and retried (intake.go, bulk.go, intakerecords.go)
	Anchors     // batches, their spans and outbox rows and signed transactions (anchor.go, spans.go, trees.go)
	Waits       // finality waits of ConfirmAnchor attempts (waits.go)
	Log         // the evidence log: entries, tree hashes, checkpoints (log.go)
	Epochs      // reward epochs and the built-in ledger's intents (epoch.go, ledger.go)
	Wallets     // wallet backfill: sync status, transfers, balances (backfill.go)
	Webhooks    // webhook subscriptions and deliveries (webhook.go)
	Maintenance // retention's archives, redrive of dead letters, size (retention.go, redrive.go, size.go)
	Stats       // counts and timings for metrics, progress and benchmarks (stats.go, progress.go, timings.go)
}

// db is what every part of the store shares: the database, the dialect its
// queries are rewritten for, the in-process state kept beside it, and the
// few steps more than one part takes (transactions here, the lanes'
// cursors in lanes.go, anchors and trees read by several parts).
type db struct {
	d *dialect
	w *pool // SQLite: the one writer; PostgreSQL: the pool
	r *pool // SQLite: readers; PostgreSQL: the same pool as w

	mu      sync.Mutex
	waiters []chan struct{}

	intake    *committer   // group commit of InsertEvidence
	trees     treeCache    // confirmed batches' Merkle trees, for audit paths
	logHashes logHashCache // the evidence log's stored hashes (log.go)
	lanes     sync.Map     // lanes known to have a cursor (ensureLanes)

	checkpointer *walCheckpointer // SQLite: checkpoints the write-ahead log
}

// newStore assembles a Store whose parts share one db.
func newStore(d *dialect, w, r *pool) *Store {
	s := &db{d: d, w: w, r: r}
	return &Store{
		db:          s,
		Intake:      Intake{s},
		Anchors:     Anchors{s},
		Waits:       Waits{s},
		Log:         Log{s},
		Epochs:      Epochs{s},
		Wallets:     Wallets{s},
		Webhooks:    Webhooks{s},
		Maintenance: Maintenance{s},
		Stats:       Stats{s},
	}
}

// Open opens (creating if needed) the SQLite store at path and applies
// migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := openSQLite(path, sqliteDialect)
	if err != nil {
		return nil, err
	}
	return start(ctx, s)
}

// openSQLite opens the SQLite file at path for d, neither migrated nor started.
func openSQLite(path string, d *dialect) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	w, err := openDB(path, 1, connWriter)
	if err != nil {
		return nil, err
	}
	r, err := openDB(path, 4, connReader)
	if err != nil {
		w.Close()
		return nil, err
	}
	ck, err := openDB(path, 1, connCheckpointer)
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	s := newStore(d, &pool{db: w, d: d}, &pool{db: r, d: d})
	s.checkpointer = startWALCheckpointer(path, ck)
	return s, nil
}

// start applies migrations and starts intake's committer.
func start(ctx context.Context, s *Store) (*Store, error) {
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	insert, probe := intakeQueries(s.d)
	if err := s.w.prepare(ctx, insert, probe); err != nil {
		s.Close()
		return nil, err
	}
	s.startCommitter()
	return s, nil
}

// The SQLite connections a store opens: its one writer, its readers, and
// the connection that checkpoints the write-ahead log (walcheckpoint.go).
type connRole int

const (
	connWriter connRole = iota
	connReader
	connCheckpointer
)

func openDB(path string, conns int, role connRole) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	switch role {
	case connReader:
		q.Add("_pragma", "query_only(1)")
	case connWriter:
		q.Set("_txlock", "immediate")
		// The writer's page cache: 32 MiB instead of SQLite's 2 MiB keeps the
		// index pages intake inserts into at hand (+12–15 % bulk intake).
		q.Add("_pragma", "cache_size(-32768)")
		// Its commits never checkpoint: the checkpointer does.
		q.Add("_pragma", "wal_autocheckpoint(0)")
	}
	// The DSN is an SQLite URI: escape what would end or alter its path part,
	// or the pragmas are lost and the file lands elsewhere.
	uriPath := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+uriPath+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// Close closes the store.
func (s *Store) Close() error {
	s.stopCommitter()
	if s.r == s.w {
		return s.w.db.Close()
	}
	var ck error
	if s.checkpointer != nil {
		ck = s.checkpointer.close()
	}
	return errors.Join(ck, s.r.db.Close(), s.w.db.Close())
}

// Ping checks the store answers (readiness).
func (s *db) Ping(ctx context.Context) error {
	var one int
	return s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// tx runs fn in a write transaction and commits it when fn returns nil.
func (s *db) tx(ctx context.Context, fn func(*txn) error) error {
	tx, err := s.w.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.tx.Rollback()
		return err
	}
	return tx.tx.Commit()
}

// exec runs one write statement outside a transaction.
func (s *db) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.w.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Changed returns a channel closed at the next change that can matter to the
// dispatcher in this process (new pending evidence, a batch submitted). Other
// processes' changes are seen by the dispatcher's periodic sweep.
func (s *db) Changed() <-chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	return ch
}

func (s *db) notify() {
	s.mu.Lock()
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, ch := range ws {
		close(ch)
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
