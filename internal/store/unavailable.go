package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrUnavailable marks an error of a store that did not answer: wrap it
// (fmt.Errorf("…: %w", ErrUnavailable)) where a caller's own time limit,
// rather than the driver, found the store unresponsive.
var ErrUnavailable = errors.New("the store is unreachable")

// Unavailable reports whether err says the store could not be reached or
// could not take the work right now, rather than that the work was wrong:
// the same request may succeed later, so the API answers it 503 with
// Retry-After instead of 500. It is the one place that
// reads the drivers' errors for that:
//
//   - PostgreSQL unreachable: a failed connection attempt (pgconn's
//     ConnectError, a connect timeout included), a network error on a live
//     connection (net.OpError, an answer cut short: io.ErrUnexpectedEOF),
//     a connection database/sql or pgx
//     already closed (driver.ErrBadConn, sql.ErrConnDone, pgconn's
//     ErrConnClosed);
//   - PostgreSQL up but not serving: SQLSTATE class 08 (connection
//     exception), 53300 too many connections, 57P01–57P03 (the server
//     shutting down, crashed or starting up);
//   - SQLite: SQLITE_BUSY or SQLITE_LOCKED after its busy timeout (another
//     process holds the file's write lock).
//
// A query the database refused (syntax, constraint, missing row) and a
// context the caller ended or whose deadline passed are not
// unavailability (a connection attempt that timed out is: pgx reports it
// as a ConnectError).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var (
		connect *pgconn.ConnectError
		pg      *pgconn.PgError
		netErr  *net.OpError
		lite    *sqlite.Error
	)
	switch {
	case errors.Is(err, ErrUnavailable), errors.As(err, &connect), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &pg):
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "53300" || pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03"
	case errors.As(err, &lite):
		code := lite.Code() & 0xff // the primary result code of an extended one
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return false
}
