package devserver

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	toolsql "go.temporal.io/server/tools/sql"

	"github.com/keeperhq/keeper/internal/redact"
)

const (
	// defaultPGDatabase is the database when the URL names none; the
	// visibility database is its name plus visibilitySuffix.
	defaultPGDatabase = "temporal"
	visibilitySuffix  = "_visibility"
	// maintenanceDB is where CREATE DATABASE runs when a database is missing.
	maintenanceDB = "postgres"
	// pgHistoryShards is fixed when a database is first used and can never
	// change. More than SQLite's one: PostgreSQL takes concurrent writers,
	// and shards are the unit of write concurrency in the history service.
	pgHistoryShards = 4

	pgConnectTimeout = 10 * time.Second
)

// Embedded schema directories of the server module (schema.Assets).
const (
	pgMainSchema       = "postgresql/v12/temporal"
	pgVisibilitySchema = "postgresql/v12/visibility"
)

// postgresTarget is a parsed Options.DB.
type postgresTarget struct {
	u *url.URL // as given, with the database in the path
	// main and visibility are the two databases the server uses.
	main, visibility string
}

// parsePostgresURL checks Options.DB. Errors never echo the URL: it may
// hold a password.
func parsePostgresURL(raw string) (postgresTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return postgresTarget{}, fmt.Errorf("devserver: DB is not a URL: %v", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return postgresTarget{}, fmt.Errorf("devserver: DB must be a postgres:// URL (postgres://user:password@host:5432/temporal), got scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return postgresTarget{}, errors.New("devserver: DB URL needs a host: postgres://user@host:5432/temporal")
	}
	if u.User.Username() == "" {
		return postgresTarget{}, errors.New("devserver: DB URL needs a user: postgres://user@host:5432/temporal")
	}
	db := strings.TrimPrefix(u.Path, "/")
	db = cmp.Or(db, defaultPGDatabase)
	if strings.ContainsAny(db, `/"`) {
		return postgresTarget{}, fmt.Errorf("devserver: DB URL: bad database name %q", db)
	}
	return postgresTarget{u: u, main: db, visibility: db + visibilitySuffix}, nil
}

// String is the URL without its password, for logs and errors.
func (p postgresTarget) String() string { return redact.URL(p.u.String()) }

// claimKey identifies the database for claimDatabase.
func (p postgresTarget) claimKey() string {
	return "postgres://" + p.addr() + "/" + p.main
}

func (p postgresTarget) addr() string {
	port := p.u.Port()
	port = cmp.Or(port, "5432")
	return net.JoinHostPort(p.u.Hostname(), port)
}

// dsn is the URL pointed at database db.
func (p postgresTarget) dsn(db string) string {
	u := *p.u
	u.Path = "/" + db
	u.RawPath = ""
	return u.String()
}

// sqlConfig is the server's persistence config for database db. Every
// server service opens its own pools on each database, so pools stay small:
// the dev server must fit in PostgreSQL's default of 100 connections next
// to other clients.
func (p postgresTarget) sqlConfig(db string, maxConns int) *config.SQL {
	password, _ := p.u.User.Password()
	attrs := map[string]string{}
	for k, v := range p.u.Query() {
		if len(v) > 0 {
			attrs[k] = v[len(v)-1]
		}
	}
	return &config.SQL{
		PluginName:        pgplugin.PluginNamePGX,
		User:              p.u.User.Username(),
		Password:          password,
		DatabaseName:      db,
		ConnectAddr:       p.addr(),
		ConnectProtocol:   "tcp",
		ConnectAttributes: attrs,
		MaxConns:          maxConns,
		MaxIdleConns:      2,
		MaxConnLifetime:   time.Hour,
	}
}

// preparePostgres creates the two databases when missing and sets up or
// upgrades their schemas with the server module's own schema tool, so a
// database set up by `temporal-sql-tool` works as well.
func preparePostgres(ctx context.Context, p postgresTarget, logger log.Logger) (main, visibility *config.SQL, err error) {
	main, visibility = p.sqlConfig(p.main, 16), p.sqlConfig(p.visibility, 4)
	steps := []struct {
		conf *config.SQL
		dir  string
	}{
		{main, pgMainSchema},
		{visibility, pgVisibilitySchema},
	}
	for _, s := range steps {
		if err := ensureDatabase(ctx, p, s.conf.DatabaseName); err != nil {
			return nil, nil, err
		}
		if err := setupSchema(s.conf, s.dir, logger); err != nil {
			return nil, nil, fmt.Errorf("devserver: schema of database %s on %s: %w", s.conf.DatabaseName, p, err)
		}
	}
	return main, visibility, nil
}

// ensureDatabase creates database db unless it exists. It connects to db
// first, so a user without access to the maintenance database can use a
// database created for them.
func ensureDatabase(ctx context.Context, p postgresTarget, db string) error {
	ctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.dsn(db))
	if err == nil {
		return conn.Close(ctx)
	}
	if pgCode(err) != "3D000" { // invalid_catalog_name: no such database
		return fmt.Errorf("devserver: connecting to database %s on %s: %w", db, p, err)
	}
	admin, err := pgx.Connect(ctx, p.dsn(maintenanceDB))
	if err != nil {
		return fmt.Errorf("devserver: database %s does not exist on %s, and connecting to %q to create it failed: %w", db, p, maintenanceDB, err)
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	if err != nil && pgCode(err) != "42P04" { // duplicate_database: created meanwhile
		return fmt.Errorf("devserver: creating database %s on %s: %w", db, p, err)
	}
	return nil
}

// setupSchema brings the schema in dir (embedded in the server module) to
// its latest version the way Temporal's auto-setup does: a database without
// a schema version starts at 0.0, then every versioned update newer than the
// database's version is applied in order.
func setupSchema(conf *config.SQL, dir string, logger log.Logger) error {
	conn, err := toolsql.NewConnection(conf, logger)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ReadSchemaVersion(); err != nil {
		// undefined_table: no schema_version table yet; no rows: the table
		// exists but this database was never set up.
		if pgCode(err) != "42P01" && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("reading schema version: %w", err)
		}
		setup := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger)
		if err := setup.Run(); err != nil {
			return fmt.Errorf("creating schema version tables: %w", err)
		}
	}
	update := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: conf.DatabaseName, SchemaName: dir}, logger)
	if err := update.Run(); err != nil {
		return fmt.Errorf("updating schema: %w", err)
	}
	return nil
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
