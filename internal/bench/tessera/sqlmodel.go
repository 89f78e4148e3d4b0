package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	_ "modernc.org/sqlite"
)

// sqlModel is a minimal model of keeper's evidence log: the tables of
// keeper's migration 12, written in keeper's own database, one transaction
// per integrated batch carrying the entries, their stored hashes (numbered
// as x/mod/sumdb/tlog numbers them), the log's state and a signed checkpoint.
type sqlModel struct {
	kind     string
	path     string
	db       *sql.DB
	in       chan item
	done     chan struct{}
	maxBatch int
	// every is the shortest time between integrations (0: integrate as
	// soon as the previous transaction commits), which bounds the signed
	// checkpoints written per second.
	every  time.Duration
	origin string
	signer note.Signer
	vkey   string

	// Owned by the integrator goroutine.
	size  uint64
	cache map[int64]tlog.Hash // the stored hashes on the tree's right edge
	// misses counts stored hashes read back from the database: the right
	// edge cache should make it zero.
	misses    atomic.Int64
	published atomic.Uint64
}

type future struct {
	done chan struct{}
	idx  uint64
	err  error
}

type item struct {
	entry []byte
	f     *future
}

const schemaSQLite = `
CREATE TABLE log_entries (idx INTEGER PRIMARY KEY, evidence_seq INTEGER NOT NULL UNIQUE, entry BLOB NOT NULL);
CREATE TABLE log_hashes (id INTEGER PRIMARY KEY, hash BLOB NOT NULL);
CREATE TABLE log_checkpoints (size INTEGER PRIMARY KEY, root BLOB NOT NULL, note TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE log_state (id INTEGER PRIMARY KEY CHECK (id = 1), size INTEGER NOT NULL, seq INTEGER NOT NULL, vkey TEXT NOT NULL DEFAULT '');
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);`

const schemaPostgres = `
CREATE TABLE log_entries (idx BIGINT PRIMARY KEY, evidence_seq BIGINT NOT NULL UNIQUE, entry BYTEA NOT NULL);
CREATE TABLE log_hashes (id BIGINT PRIMARY KEY, hash BYTEA NOT NULL);
CREATE TABLE log_checkpoints (size BIGINT PRIMARY KEY, root BYTEA NOT NULL, note TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE log_state (id INTEGER PRIMARY KEY CHECK (id = 1), size BIGINT NOT NULL, seq BIGINT NOT NULL, vkey TEXT NOT NULL DEFAULT '');
INSERT INTO log_state (id, size, seq) VALUES (1, 0, 0);`

func newSQLModel(ctx context.Context, kind, dir, pgURL string, maxBatch int, every time.Duration) (*sqlModel, error) {
	origin := "bench.example/keeper-" + kind
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	m := &sqlModel{vkey: vkey, every: every,
		kind: kind, in: make(chan item, 8192), done: make(chan struct{}), maxBatch: maxBatch,
		origin: origin, signer: signer, cache: map[int64]tlog.Hash{},
	}
	switch kind {
	case "sqlite":
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		m.path = filepath.Join(dir, "keeper.db")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(m.path + suffix)
		}
		// keeper's writer settings (store/store.go).
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "cache_size(-32768)")
		if m.db, err = sql.Open("sqlite", "file:"+m.path+"?"+q.Encode()); err != nil {
			return nil, err
		}
		m.db.SetMaxOpenConns(1)
		if _, err := m.db.ExecContext(ctx, schemaSQLite); err != nil {
			return nil, err
		}
	case "pg":
		admin, err := sql.Open("pgx", strings.Replace(pgURL, "/tessera_bench?", "/test?", 1))
		if err != nil {
			return nil, err
		}
		for _, q := range []string{"DROP DATABASE IF EXISTS tessera_bench", "CREATE DATABASE tessera_bench"} {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				return nil, err
			}
		}
		admin.Close()
		if m.db, err = sql.Open("pgx", pgURL); err != nil {
			return nil, err
		}
		m.db.SetMaxOpenConns(4)
		if _, err := m.db.ExecContext(ctx, schemaPostgres); err != nil {
			return nil, err
		}
	}
	go m.integrator(ctx)
	return m, nil
}

func (m *sqlModel) Add(ctx context.Context, entry []byte) func() (uint64, error) {
	f := &future{done: make(chan struct{})}
	m.in <- item{entry, f}
	return func() (uint64, error) {
		<-f.done
		return f.idx, f.err
	}
}

// integrator takes whatever entries wait (up to maxBatch) and integrates
// them in one transaction, then the next batch, as keeper's committer does.
func (m *sqlModel) integrator(ctx context.Context) {
	defer close(m.done)
	var last time.Time
	for {
		first, ok := <-m.in
		if d := time.Until(last.Add(m.every)); d > 0 {
			time.Sleep(d)
		}
		last = time.Now()
		if !ok {
			return
		}
		items := []item{first}
	drain:
		for len(items) < m.maxBatch {
			select {
			case it, ok := <-m.in:
				if !ok {
					break drain
				}
				items = append(items, it)
			default:
				break drain
			}
		}
		base := m.size
		err := m.integrate(ctx, items)
		for i, it := range items {
			it.f.idx, it.f.err = base+uint64(i), err
			close(it.f.done)
		}
		if err != nil {
			log.Fatalf("integrate: %v", err)
		}
	}
}

func (m *sqlModel) ph(i int) string {
	if m.kind == "pg" {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

func (m *sqlModel) integrate(ctx context.Context, items []item) error {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			h, ok := m.cache[id]
			if !ok {
				m.misses.Add(1)
				var b []byte
				if err := tx.QueryRowContext(ctx, "SELECT hash FROM log_hashes WHERE id = "+m.ph(1), id).Scan(&b); err != nil {
					return nil, fmt.Errorf("stored hash %d: %w", id, err)
				}
				copy(h[:], b)
			}
			out[i] = h
		}
		return out, nil
	})

	n := len(items)
	idxs, seqs, entries := make([]int64, n), make([]int64, n), make([][]byte, n)
	var hashIDs []int64
	var hashes [][]byte
	added := map[int64]tlog.Hash{}
	for i, it := range items {
		idx := int64(m.size) + int64(i)
		idxs[i], seqs[i], entries[i] = idx, idx+1, it.entry
		hs, err := tlog.StoredHashesForRecordHash(idx, tlog.RecordHash(it.entry), reader)
		if err != nil {
			return err
		}
		first := tlog.StoredHashIndex(0, idx)
		for j, h := range hs {
			m.cache[first+int64(j)] = h
			added[first+int64(j)] = h
			hashIDs = append(hashIDs, first+int64(j))
			hashes = append(hashes, append([]byte(nil), h[:]...))
		}
	}
	newSize := m.size + uint64(n)
	root, err := tlog.TreeHash(int64(newSize), reader)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s\n%d\n%s\n", m.origin, newSize, base64.StdEncoding.EncodeToString(root[:]))
	signed, err := note.Sign(&note.Note{Text: body}, m.signer)
	if err != nil {
		return err
	}

	if m.kind == "pg" {
		// One statement per table: PostgreSQL round trips are the cost.
		if _, err := tx.ExecContext(ctx, `INSERT INTO log_entries (idx, evidence_seq, entry)
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[])`, idxs, seqs, entries); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO log_hashes (id, hash)
			SELECT * FROM unnest($1::bigint[], $2::bytea[])`, hashIDs, hashes); err != nil {
			return err
		}
	} else {
		// SQLite is in process: prepared single-row inserts are as fast as any.
		se, err := tx.PrepareContext(ctx, "INSERT INTO log_entries (idx, evidence_seq, entry) VALUES (?, ?, ?)")
		if err != nil {
			return err
		}
		for i := range idxs {
			if _, err := se.ExecContext(ctx, idxs[i], seqs[i], entries[i]); err != nil {
				return err
			}
		}
		sh, err := tx.PrepareContext(ctx, "INSERT INTO log_hashes (id, hash) VALUES (?, ?)")
		if err != nil {
			return err
		}
		for i := range hashIDs {
			if _, err := sh.ExecContext(ctx, hashIDs[i], hashes[i]); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO log_checkpoints (size, root, note, created_at) VALUES ("+
		m.ph(1)+", "+m.ph(2)+", "+m.ph(3)+", "+m.ph(4)+")", int64(newSize), root[:], string(signed), time.Now().UnixMilli()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE log_state SET size = "+m.ph(1)+", seq = "+m.ph(2)+" WHERE id = 1",
		int64(newSize), int64(newSize)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		for id := range added {
			delete(m.cache, id)
		}
		return err
	}
	m.size = newSize
	m.prune()
	m.published.Store(newSize)
	return nil
}

// prune keeps only the right edge of the tree: the stored hashes of its
// complete subtrees, all that the next append and tree hash read.
func (m *sqlModel) prune() {
	keep := map[int64]tlog.Hash{}
	for l := 0; l < 64; l++ {
		if m.size>>l&1 == 1 {
			id := tlog.StoredHashIndex(l, int64(m.size>>l)-1)
			h, ok := m.cache[id]
			if !ok {
				log.Fatalf("right edge hash %d (level %d) not cached", id, l)
			}
			keep[id] = h
		}
	}
	m.cache = keep
}

func (m *sqlModel) Published(context.Context) (uint64, error) {
	return m.published.Load(), nil
}

func (m *sqlModel) Disk(ctx context.Context) (int64, string, error) {
	if m.kind == "sqlite" {
		if _, err := m.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return 0, "", err
		}
		st, err := os.Stat(m.path)
		if err != nil {
			return 0, "", err
		}
		var cps int64
		_ = m.db.QueryRowContext(ctx, "SELECT count(*) FROM log_checkpoints").Scan(&cps)
		return st.Size(), fmt.Sprintf("SQLite file size after wal_checkpoint(TRUNCATE); %d checkpoint rows; %d hash cache misses", cps, m.misses.Load()), nil
	}
	if _, err := m.db.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		return 0, "", err
	}
	var n, cps int64
	if err := m.db.QueryRowContext(ctx, `SELECT sum(pg_total_relation_size(c::regclass))
		FROM unnest(ARRAY['log_entries','log_hashes','log_checkpoints','log_state']) c`).Scan(&n); err != nil {
		return 0, "", err
	}
	_ = m.db.QueryRowContext(ctx, "SELECT count(*) FROM log_checkpoints").Scan(&cps)
	return n, fmt.Sprintf("pg_total_relation_size of the 4 log tables after VACUUM; %d checkpoint rows; %d hash cache misses", cps, m.misses.Load()), nil
}

func (m *sqlModel) Close(ctx context.Context) error {
	close(m.in)
	<-m.done
	defer m.db.Close()
	return m.check(ctx)
}

// check proves the model wrote a correct log: every stored hash row equals
// the one recomputed from the entries alone, and the last signed checkpoint
// verifies and commits to the root recomputed from them.
func (m *sqlModel) check(ctx context.Context) error {
	rows, err := m.db.QueryContext(ctx, "SELECT idx, entry FROM log_entries ORDER BY idx")
	if err != nil {
		return err
	}
	want := map[int64]tlog.Hash{}
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = want[id]
		}
		return out, nil
	})
	var n int64
	for rows.Next() {
		var idx int64
		var e []byte
		if err := rows.Scan(&idx, &e); err != nil {
			return err
		}
		if idx != n {
			return fmt.Errorf("gap: index %d where %d was due", idx, n)
		}
		hs, err := tlog.StoredHashesForRecordHash(idx, tlog.RecordHash(e), reader)
		if err != nil {
			return err
		}
		for j, h := range hs {
			want[tlog.StoredHashIndex(0, idx)+int64(j)] = h
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	hrows, err := m.db.QueryContext(ctx, "SELECT id, hash FROM log_hashes")
	if err != nil {
		return err
	}
	var got int
	for hrows.Next() {
		var id int64
		var h []byte
		if err := hrows.Scan(&id, &h); err != nil {
			return err
		}
		if w, ok := want[id]; !ok || string(w[:]) != string(h) {
			return fmt.Errorf("stored hash %d differs", id)
		}
		got++
	}
	hrows.Close()
	if got != len(want) {
		return fmt.Errorf("%d stored hashes, want %d", got, len(want))
	}
	var text string
	if err := m.db.QueryRowContext(ctx, "SELECT note FROM log_checkpoints ORDER BY size DESC LIMIT 1").Scan(&text); err != nil {
		return err
	}
	v, err := note.NewVerifier(m.vkey)
	if err != nil {
		return err
	}
	cp, err := note.Open([]byte(text), note.VerifierList(v))
	if err != nil {
		return err
	}
	root, err := tlog.TreeHash(n, reader)
	if err != nil {
		return err
	}
	if body := fmt.Sprintf("%s\n%d\n%s\n", m.origin, n, base64.StdEncoding.EncodeToString(root[:])); cp.Text != body {
		return fmt.Errorf("last checkpoint %q, want %q", cp.Text, body)
	}
	fmt.Fprintf(os.Stderr, "check: %d entries, %d stored hashes (%.2f per entry), last checkpoint verifies\n", n, got, float64(got)/float64(n))
	return nil
}
