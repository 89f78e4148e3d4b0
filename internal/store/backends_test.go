package store_test

import (
	"context"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for creating and dropping test schemas
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

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
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		var err error
		cols[db.Name], err = store.Columns(ctx, db.Open(t))
		require.NoError(t, err)
	})
	if len(cols) == len(storetest.Backends) {
		assert.Contains(t, cols["sqlite"], "outbox")
		assert.Equal(t, cols["sqlite"], cols["postgres"], "a migration added for one database is added for the other under the same number")
	}
}
