// Package storetest is the one way tests open a store: a fresh SQLite file
// (SQLite), a fresh schema on the PostgreSQL the tests share (Postgres), an
// existing store a node left (Open), or each of the two databases in turn
// (Each). Every store it opens is closed when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for creating and dropping test schemas
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/store"
)

// SQLite opens a fresh SQLite store in the test's temporary directory.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, filepath.Join(t.TempDir(), "keeper.db"))
}

// Postgres opens a fresh PostgreSQL store in a schema of the test's own
// (PostgresURL).
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, PostgresURL(t))
}

// Open opens the store at where, an SQLite file path or a PostgreSQL URL:
// a node's store, or one the test opens twice. It is closed when the test
// ends; closing it sooner is fine.
func Open(t testing.TB, where string) *store.Store {
	t.Helper()
	st, err := TryOpen(where)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// TryOpen opens the store at where as Open does but hands back the error,
// for tests of what opening refuses; a store it opens is the caller's to
// close.
func TryOpen(where string) (*store.Store, error) {
	open := store.Open
	if store.IsPostgresURL(where) {
		open = store.OpenPostgres
	}
	return open(context.Background(), where)
}

// Backend is one kind of database a store can live in.
type Backend struct {
	Name string
	// Fresh makes an empty store's location for one test, removed when the
	// test ends: an SQLite file path or a PostgreSQL URL.
	Fresh func(t testing.TB) string
}

// Backends are the two databases keeper runs on.
var Backends = []Backend{
	{Name: "sqlite", Fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "keeper.db") }},
	{Name: "postgres", Fresh: PostgresURL},
}

// Each runs test once per database, as subtests named after them.
func Each(t *testing.T, test func(t *testing.T, db Backend)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) { test(t, b) })
	}
}

// Open opens a fresh store of this database, closed when the test ends.
func (b Backend) Open(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, b.Fresh(t))
}

// The PostgreSQL the tests use: KEEPER_TEST_POSTGRES_URL, or the local
// server with trust authentication that developers' machines and CI have
// (user postgres or root, database test). It is found once; each schema is
// made and dropped over a connection of its own, so no pool outlives the
// tests (leaktest).
var (
	pgOnce sync.Once
	pgURL  string
	pgErr  error
)

func postgresServer() (string, error) {
	pgOnce.Do(func() {
		candidates := []string{
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
			"postgres://root@127.0.0.1:5432/test?sslmode=disable",
		}
		if u := os.Getenv("KEEPER_TEST_POSTGRES_URL"); u != "" {
			candidates = []string{u}
		}
		var errs []string
		for _, u := range candidates {
			err := admin(u, "SELECT 1")
			if err == nil {
				pgURL = u
				return
			}
			errs = append(errs, fmt.Sprintf("%s: %v", redact.URL(u), err))
		}
		pgErr = fmt.Errorf("no PostgreSQL to test against (set KEEPER_TEST_POSTGRES_URL): %s", strings.Join(errs, "; "))
	})
	return pgURL, pgErr
}

// admin runs one statement on the server at u over a connection of its own.
func admin(u, statement string) error {
	db, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, statement)
	return err
}

// PostgresURL makes a schema of the test's own, dropped when the test
// ends, and returns the URL of a store in it. Without a server the test is
// skipped, except in CI, where it fails: CI has one.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base, err := postgresServer()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	var r [6]byte
	rand.Read(r[:])
	schema := "keeper_test_" + hex.EncodeToString(r[:])
	require.NoError(t, admin(base, `CREATE SCHEMA `+schema))
	t.Cleanup(func() { require.NoError(t, admin(base, `DROP SCHEMA `+schema+` CASCADE`)) })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
