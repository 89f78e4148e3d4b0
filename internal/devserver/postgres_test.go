package devserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
)

// testPostgres returns the URL of a fresh, uniquely named database on the
// PostgreSQL the tests use (KEEPER_TEST_POSTGRES_URL, or the local server
// with trust authentication that developers' machines and CI have: user
// postgres or root on 127.0.0.1:5432), and a way to connect to any database
// there. The database and its visibility twin are dropped after the test.
// Without a reachable PostgreSQL the test is skipped, except under CI=true,
// where it fails.
func testPostgres(t *testing.T) (dbURL string, connect func(db string) *pgx.Conn) {
	t.Helper()
	candidates := []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgres://root@127.0.0.1:5432/postgres?sslmode=disable",
	}
	if u := os.Getenv("KEEPER_TEST_POSTGRES_URL"); u != "" {
		candidates = []string{u}
	}
	var base *url.URL
	var errs []error
	for _, raw := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, raw)
		if err == nil {
			_ = c.Close(ctx)
			base, err = url.Parse(raw)
		}
		cancel()
		if err == nil {
			break
		}
		errs = append(errs, err) // pgx errors name user and database, never the password
	}
	if base == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required under CI=true: %v", errs)
		}
		t.Skipf("no PostgreSQL to test against (set KEEPER_TEST_POSTGRES_URL): %v", errs)
	}
	withDB := func(db string) string {
		u := *base
		u.Path = "/" + db
		return u.String()
	}
	connect = func(db string) *pgx.Conn {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, withDB(db))
		require.NoError(t, err)
		return c
	}

	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "keeper_devserver_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := connect(maintenanceDB)
		defer c.Close(ctx)
		for _, db := range []string{name, name + visibilitySuffix} {
			// FORCE: the server's pools may still hold connections.
			_, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
			assert.NoError(t, err, "drop %s", db)
		}
	})
	return withDB(name), connect
}

func TestPostgresKeepsWorkflowHistoryAcrossRestart(t *testing.T) {
	dbURL, connect := testPostgres(t)
	logger, _ := testLogger(t)
	opts := Options{
		DB:               dbURL,
		Logger:           logger,
		SearchAttributes: map[string]enums.IndexedValueType{"KeeperChain": enums.INDEXED_VALUE_TYPE_KEYWORD},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A fresh database: created, schema set up, namespace registered.
	s := startServer(t, opts)
	c := dial(t, s)
	runID := runGreet(ctx, t, c, "greet-pg", "etherlink")
	c.Close()
	require.NoError(t, s.Stop())

	// The history lives in PostgreSQL, at the server's schema version.
	main := connect(mustDBName(t, dbURL))
	defer main.Close(ctx)
	var version string
	require.NoError(t, main.QueryRow(ctx, "SELECT curr_version FROM schema_version WHERE db_name = $1", mustDBName(t, dbURL)).Scan(&version))
	assert.Equal(t, pgschema.Version, version)
	var nodes int
	require.NoError(t, main.QueryRow(ctx, "SELECT count(*) FROM history_node").Scan(&nodes))
	assert.Positive(t, nodes, "history events are stored in PostgreSQL")

	// Restart on the same database: the workflow and its history are there.
	s2 := startServer(t, opts)
	c2 := dial(t, s2)
	var types []enums.EventType
	it := c2.GetWorkflowHistory(ctx, "greet-pg", runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		types = append(types, ev.GetEventType())
	}
	require.NotEmpty(t, types)
	assert.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, types[0])
	assert.Equal(t, enums.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, types[len(types)-1])
	var again string
	require.NoError(t, c2.GetWorkflow(ctx, "greet-pg", runID).Get(ctx, &again))
	assert.Equal(t, "hello keeper", again)

	// Visibility is in its own database and answers search-attribute queries.
	assertListedByChain(ctx, t, c2, "etherlink", "greet-pg")
}

func mustDBName(t *testing.T, dbURL string) string {
	t.Helper()
	p, err := parsePostgresURL(dbURL)
	require.NoError(t, err)
	return p.main
}

func TestPostgresURLErrorsNeverShowThePassword(t *testing.T) {
	for _, raw := range []string{
		"mysql://u:s3cret@host/db",
		"postgres://:s3cret@host:5432/db",
		"postgres://u:s3cret@/db",
		"postgres://u:s3cret@host:5432/bad%22name",
		"postgres://u:s3cret@host:notaport/db",
	} {
		_, err := Start(context.Background(), Options{DB: raw})
		require.Error(t, err, raw)
		assert.NotContains(t, err.Error(), "s3cret")
	}

	p, err := parsePostgresURL("postgresql://u:s3cret@db.example:6543/?sslmode=require&password=t0psecret")
	require.NoError(t, err)
	assert.Equal(t, "temporal", p.main)
	assert.Equal(t, "temporal_visibility", p.visibility)
	assert.NotContains(t, p.String(), "s3cret")
	assert.NotContains(t, p.String(), "t0psecret")
	conf := p.sqlConfig(p.main, 4)
	assert.Equal(t, "db.example:6543", conf.ConnectAddr)
	assert.Equal(t, "s3cret", conf.Password)
	assert.Equal(t, "require", conf.ConnectAttributes["sslmode"])
}
