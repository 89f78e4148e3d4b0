package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPostgreSQLPlaceholdersAreNumberedAndLiteralsLeftAlone(t *testing.T) {
	for q, want := range map[string]string{
		`SELECT 1`:                              `SELECT 1`,
		`UPDATE t SET a = ?, b = ? WHERE c = ?`: `UPDATE t SET a = $1, b = $2 WHERE c = $3`,
		`SELECT x FROM t WHERE c = ?1 AND d = ?2 OR e = ?1`: `SELECT x FROM t WHERE c = $1 AND d = $2 OR e = $1`,
		`SELECT '?' , ? FROM t WHERE s = 'it''s ?'`:         `SELECT '?' , $1 FROM t WHERE s = 'it''s ?'`,
		`SELECT ?10, ?`: `SELECT $10, $1`,
	} {
		assert.Equal(t, want, postgresDialect.bind(q), q)
		assert.Equal(t, q, sqliteDialect.bind(q), "SQLite takes ? as written")
	}
}
