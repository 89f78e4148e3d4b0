package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for creating and dropping the fresh databases

	"github.com/keeperhq/keeper/internal/redact"
)

// DefaultPostgresURL is the PostgreSQL server the postgres and multi
// deployments make their fresh databases on: the local one, as developers'
// machines and CI have it.
const DefaultPostgresURL = "postgres://root@127.0.0.1:5432"

// localPostgres reports whether u names a PostgreSQL server on this
// machine, whose processes' CPU the bench can read.
func localPostgres(u string) bool {
	if u == "" {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch p.Hostname() {
	case "127.0.0.1", "localhost", "::1", "":
		return true
	}
	return false
}

// databases are the fresh PostgreSQL databases of one stack: keeper's store
// and the embedded Temporal server's (the server adds <temporal>_visibility).
type databases struct {
	store, temporal string // URLs
	drop            func()
}

var databaseSeq atomic.Int64

// freshDatabases creates keeper's database on the server at base (a URL
// whose path, if any, is ignored) under a name of its own, and names one for
// Temporal, which the embedded server creates itself. drop removes all
// three, whoever is still connected, and says on log what it could not
// drop. Errors never show base's password.
func freshDatabases(ctx context.Context, base string, log *slog.Logger) (databases, error) {
	id := strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.FormatInt(databaseSeq.Add(1), 10)
	keeperDB, temporalDB := "kbench_"+id, "tbench_"+id
	admin, err := adminDB(ctx, base)
	if err != nil {
		return databases{}, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+keeperDB); err != nil {
		return databases{}, fmt.Errorf("bench: create database %s on %s: %w", keeperDB, redact.URL(base), err)
	}
	d := databases{store: withDatabase(base, keeperDB), temporal: withDatabase(base, temporalDB)}
	d.drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := adminDB(ctx, base)
		if admin != nil {
			defer admin.Close()
		}
		for _, db := range []string{keeperDB, temporalDB, temporalDB + "_visibility"} {
			if admin != nil {
				_, err = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`)
			}
			if err != nil {
				log.Error("bench: a fresh database is left behind: drop it by hand", "database", db, "server", redact.URL(base), "error", err)
			}
		}
	}
	return d, nil
}

// adminDB connects to the maintenance database of the server at base.
func adminDB(ctx context.Context, base string) (*sql.DB, error) {
	db, err := sql.Open("pgx", withDatabase(base, "postgres"))
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("bench: connect to PostgreSQL at %s: %s", redact.URL(base), pgReason(err))
	}
	return db, nil
}

// pgReason is err without what pgx's message may quote of the connection
// settings (a password given as a parameter).
func pgReason(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return "invalid settings"
	}
	return err.Error()
}

// checkPostgresURL checks a base URL before anything connects. Not echoed:
// it may hold a password.
func checkPostgresURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Hostname() == "" {
		return fmt.Errorf("bench: the PostgreSQL URL must look like postgres://user@host:5432")
	}
	return nil
}

// withDatabase is base pointed at database db, its query kept.
func withDatabase(base, db string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path, u.RawPath = "/"+db, ""
	return u.String()
}
