package store_test

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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/redact"
	"github.com/keeperhq/keeper/store"
)

// backend is one kind of database the store's tests run against.
type backend struct {
	name string
	// fresh makes an empty store for one test, removed when the test ends,
	// and returns where it is: an SQLite file path or a PostgreSQL URL.
	fresh func(t *testing.T) string
}

var backends = []backend{
	{name: "sqlite", fresh: func(t *testing.T) string { return filepath.Join(t.TempDir(), "keeper.db") }},
	{name: "postgres", fresh: freshPostgres},
}

// eachBackend runs test once per backend, as subtests named after them.
func eachBackend(t *testing.T, test func(t *testing.T, db backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// openStore opens a fresh store of this backend, closed when the test ends.
func (b backend) openStore(t *testing.T) *store.Store {
	t.Helper()
	st := openAt(t, b.fresh(t))
	t.Cleanup(func() { st.Close() })
	return st
}

// openAt opens the store at where: a PostgreSQL URL or an SQLite file path.
func openAt(t *testing.T, where string) *store.Store {
	t.Helper()
	open := store.Open
	if store.IsPostgresURL(where) {
		open = store.OpenPostgres
	}
	st, err := open(context.Background(), where)
	require.NoError(t, err)
	return st
}

// The PostgreSQL the tests use: KEEPER_TEST_POSTGRES_URL, or the local
// server with trust authentication that developers' machines and CI have
// (user postgres or root, database test).
var (
	pgOnce  sync.Once
	pgAdmin *sql.DB
	pgURL   string
	pgErr   error
)

func postgresServer() (*sql.DB, string, error) {
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
			db, err := sql.Open("pgx", u)
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = db.PingContext(ctx)
				cancel()
			}
			if err == nil {
				pgAdmin, pgURL = db, u
				return
			}
			if db != nil {
				db.Close()
			}
			errs = append(errs, fmt.Sprintf("%s: %v", redact.URL(u), err))
		}
		pgErr = fmt.Errorf("no PostgreSQL to test against (set KEEPER_TEST_POSTGRES_URL): %s", strings.Join(errs, "; "))
	})
	return pgAdmin, pgURL, pgErr
}

// freshPostgres makes a schema of the test's own, dropped when the test
// ends, and returns the URL of a store in it. Without a server the test is
// skipped, except in CI, where it fails: CI has one.
func freshPostgres(t *testing.T) string {
	t.Helper()
	admin, base, err := postgresServer()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	var r [6]byte
	rand.Read(r[:])
	schema := "keeper_test_" + hex.EncodeToString(r[:])
	_, err = admin.Exec(`CREATE SCHEMA ` + schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		require.NoError(t, err)
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

func TestErrorsOpeningAPostgreSQLStoreNeverShowThePassword(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{
		"postgres://keeper:pw-in-user-part@127.0.0.1:1/keeper?connect_timeout=2",
		"postgres://keeper@127.0.0.1:1/keeper?connect_timeout=2&password=pw-in-parameter",
		"postgres://keeper:pw-in-user-part@127.0.0.1:5432/keeper?sslmode=sometimes&password=pw-in-parameter",
		"postgresql://keeper:pw-in-user-part@[::1:5432/keeper",
	} {
		_, err := store.OpenPostgres(ctx, u)
		require.Error(t, err, u)
		assert.NotContains(t, err.Error(), "pw-in-", "error for %s: %v", u, err)
		assert.NotContains(t, redact.URL(u), "pw-in-")
	}
	_, err := store.OpenPostgres(ctx, "mysql://keeper:pw-in-user-part@127.0.0.1/keeper")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "pw-in-")
}

func TestBothDatabasesGetTheSameTablesAndColumns(t *testing.T) {
	ctx := context.Background()
	cols := map[string]map[string][]string{}
	eachBackend(t, func(t *testing.T, db backend) {
		var err error
		cols[db.name], err = store.Columns(ctx, db.openStore(t))
		require.NoError(t, err)
	})
	if len(cols) == len(backends) {
		assert.Contains(t, cols["sqlite"], "outbox")
		assert.Equal(t, cols["sqlite"], cols["postgres"], "a migration added for one database is added for the other under the same number")
	}
}
