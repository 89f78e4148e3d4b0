package store

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBothDatabasesHaveTheSameMigrationsUnderTheSameNumbers(t *testing.T) {
	require.NotEmpty(t, sqliteMigrations)
	require.Len(t, postgresMigrations, len(sqliteMigrations))
	for i, m := range sqliteMigrations {
		pg := postgresMigrations[i]
		assert.Equal(t, i+1, m.version)
		assert.Equal(t, m.version, pg.version)
		assert.Equal(t, m.name, pg.name, "migration %d", m.version)
		assert.NotEmpty(t, m.sql, "migration %d", m.version)
		assert.NotEmpty(t, pg.sql, "migration %d", m.version)
	}
}

func TestMigrationFilesMustBeNumberedFromOneWithoutAGap(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("CREATE TABLE t (x INTEGER);")}
	for name, fsys := range map[string]fstest.MapFS{
		"a gap":            {"m/001_a.sql": file, "m/003_c.sql": file},
		"a repeat":         {"m/001_a.sql": file, "m/001_b.sql": file},
		"no name":          {"m/001.sql": file},
		"not three digits": {"m/1_a.sql": file},
		"not .sql":         {"m/001_a.txt": file},
		"not from one":     {"m/002_b.sql": file},
	} {
		_, err := loadMigrations(fsys, "m")
		assert.Error(t, err, name)
	}
	ms, err := loadMigrations(fstest.MapFS{"m/002_b.sql": file, "m/001_a.sql": file}, "m")
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, migration{version: 1, name: "a", sql: string(file.Data)}, ms[0])
	assert.Equal(t, 2, ms[1].version)
}
