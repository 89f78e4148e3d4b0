package witness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// schema is the witness's whole state: per log, the checkpoint it cosigned
// last (size 0 and the empty tree's root before the first), and the
// refused requests it keeps as evidence.
const schema = `
CREATE TABLE IF NOT EXISTS logs (
	origin     TEXT PRIMARY KEY,
	size       INTEGER NOT NULL,
	root       BLOB NOT NULL,
	checkpoint BLOB,          -- the log-signed checkpoint cosigned last, as received
	updated    TEXT NOT NULL  -- RFC 3339, UTC
) STRICT;
CREATE TABLE IF NOT EXISTS refused (
	id      INTEGER PRIMARY KEY,
	time    TEXT NOT NULL,
	origin  TEXT NOT NULL,
	status  INTEGER NOT NULL,
	reason  TEXT NOT NULL,
	request BLOB NOT NULL
) STRICT;
`

// maxRefused bounds the refused requests kept. Only the log's key can add
// one, so the bound is against a log that fills the witness's disk; the
// first ones (the first fork) are the evidence that matters, and are kept.
const maxRefused = 1000

// store is the witness's SQLite file: one connection, so every statement
// is serialized, in WAL mode with synchronous FULL, so that a commit
// survives a crash of the process or of the machine once it returns.
type store struct {
	db *sql.DB
}

func openStore(ctx context.Context, path string) (*store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	// The DSN is an SQLite URI: escape what would end or alter its path part.
	uriPath := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+uriPath+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("witness: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("witness: open %s: %w", path, err)
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

// ensure gives each origin the initial state unless it has one.
func (s *store) ensure(ctx context.Context, origins []string, at time.Time) error {
	for _, o := range origins {
		_, err := s.db.ExecContext(ctx, `INSERT INTO logs (origin, size, root, updated) VALUES (?, 0, ?, ?) ON CONFLICT (origin) DO NOTHING`,
			o, tlogwitness.EmptyRoot[:], stamp(at))
		if err != nil {
			return fmt.Errorf("witness: record log %q: %w", o, err)
		}
	}
	return nil
}

// state is the checkpoint cosigned last for origin.
func (s *store) state(ctx context.Context, origin string) (tlogwitness.State, error) {
	var size int64
	var root []byte
	err := s.db.QueryRowContext(ctx, `SELECT size, root FROM logs WHERE origin = ?`, origin).Scan(&size, &root)
	if err != nil {
		return tlogwitness.State{}, fmt.Errorf("witness: read the state of %q: %w", origin, err)
	}
	if size < 0 || len(root) != 32 {
		return tlogwitness.State{}, fmt.Errorf("witness: the state of %q is corrupt (size %d, a %d-byte root)", origin, size, len(root))
	}
	return tlogwitness.State{Size: uint64(size), Root: [32]byte(root)}, nil
}

// advance records to as origin's state, with the checkpoint that carries
// it, if the state is still from; it reports whether it did. Sizes beyond
// an SQLite integer are the caller's to refuse.
func (s *store) advance(ctx context.Context, origin string, from, to tlogwitness.State, checkpoint []byte, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE logs SET size = ?, root = ?, checkpoint = ?, updated = ? WHERE origin = ? AND size = ? AND root = ?`,
		int64(to.Size), to.Root[:], checkpoint, stamp(at), origin, int64(from.Size), from.Root[:])
	if err != nil {
		return false, fmt.Errorf("witness: record size %d of %q: %w", to.Size, origin, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("witness: record size %d of %q: %w", to.Size, origin, err)
	}
	return n == 1, nil
}

// sizes are the sizes cosigned last, by origin.
func (s *store) sizes(ctx context.Context) (map[string]uint64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT origin, size FROM logs`)
	if err != nil {
		return nil, fmt.Errorf("witness: read the logs' states: %w", err)
	}
	defer rows.Close()
	out := map[string]uint64{}
	for rows.Next() {
		var origin string
		var size int64
		if err := rows.Scan(&origin, &size); err != nil {
			return nil, fmt.Errorf("witness: read the logs' states: %w", err)
		}
		out[origin] = uint64(size)
	}
	return out, rows.Err()
}

// errFull is keep's answer once maxRefused requests are kept.
var errFull = errors.New("witness: the refused requests kept are at their bound; this one is not kept")

// keep records a refused request, unless maxRefused are kept already.
func (s *store) keep(ctx context.Context, r Refusal) error {
	res, err := s.db.ExecContext(ctx, `INSERT INTO refused (time, origin, status, reason, request)
		SELECT ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM refused) < ?`,
		stamp(r.Time), r.Origin, r.Status, r.Reason, r.Request, maxRefused)
	if err != nil {
		return fmt.Errorf("witness: keep a refused request of %q: %w", r.Origin, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return errFull
	}
	return nil
}

// refused lists the refused requests kept, oldest first.
func (s *store) refused(ctx context.Context) ([]Refusal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, time, origin, status, reason, request FROM refused ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("witness: list the refused requests: %w", err)
	}
	defer rows.Close()
	out := []Refusal{}
	for rows.Next() {
		var r Refusal
		var at string
		if err := rows.Scan(&r.ID, &at, &r.Origin, &r.Status, &r.Reason, &r.Request); err != nil {
			return nil, fmt.Errorf("witness: list the refused requests: %w", err)
		}
		if r.Time, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("witness: refused request %d: its time %q: %w", r.ID, at, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
