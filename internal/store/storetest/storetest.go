// Package storetest gives tests of any package a PostgreSQL store of their
// own: a fresh schema on the PostgreSQL the tests share, dropped when the
// test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for creating and dropping test schemas
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/redact"
)

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

// PostgresURL makes a schema of the test's own, dropped when the test
// ends, and returns the URL of a store in it. Without a server the test is
// skipped, except in CI, where it fails: CI has one.
func PostgresURL(t testing.TB) string {
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
