package store_test

import (
	"context"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for creating and dropping test schemas
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
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

// freshPostgres is a PostgreSQL store of the test's own (storetest).
func freshPostgres(t *testing.T) string { return storetest.PostgresURL(t) }

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
