package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/mysql"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// tesseraLog is Tessera's appender over one of its drivers.
type tesseraLog struct {
	driver   string
	dir      string
	db       *sql.DB
	add      tessera.AddFn
	shutdown func(context.Context) error
	reader   tessera.LogReader
}

func newSigner(origin string) (note.Signer, error) {
	skey, _, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, err
	}
	return note.NewSigner(skey)
}

func newTessera(ctx context.Context, driver, dir, mysqlDSN string, batch uint, age, cpEvery time.Duration) (*tesseraLog, error) {
	signer, err := newSigner("bench.example/tessera-" + driver)
	if err != nil {
		return nil, err
	}
	t := &tesseraLog{driver: driver}
	var d tessera.Driver
	switch driver {
	case "posix":
		t.dir = filepath.Join(dir, "posix")
		if err := os.RemoveAll(t.dir); err != nil {
			return nil, err
		}
		if d, err = posix.New(ctx, posix.Config{Path: t.dir}); err != nil {
			return nil, err
		}
	case "mysql":
		if err := resetMySQL(ctx, mysqlDSN); err != nil {
			return nil, err
		}
		if t.db, err = sql.Open("mysql", mysqlDSN); err != nil {
			return nil, err
		}
		if d, err = mysql.New(ctx, t.db); err != nil {
			return nil, err
		}
	}
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithBatching(batch, age).
		WithCheckpointInterval(cpEvery)
	a, shutdown, reader, err := tessera.NewAppender(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	t.add, t.shutdown, t.reader = a.Add, shutdown, reader
	return t, nil
}

// resetMySQL recreates the bench database with Tessera's own schema.
func resetMySQL(ctx context.Context, dsn string) error {
	root := dsn[:strings.LastIndex(dsn, "/")+1] + "?multiStatements=true"
	db, err := sql.Open("mysql", root)
	if err != nil {
		return err
	}
	defer db.Close()
	schema, err := os.ReadFile(filepath.Join(tesseraDir(), "storage/mysql/schema.sql"))
	if err != nil {
		return err
	}
	for _, q := range []string{"DROP DATABASE IF EXISTS tessera_bench", "CREATE DATABASE tessera_bench", "USE tessera_bench", string(schema)} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%.40s: %w", q, err)
		}
	}
	return nil
}

// tesseraDir is where the go command unpacked Tessera's module.
func tesseraDir() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/transparency-dev/tessera").Output()
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(out))
}

func (t *tesseraLog) Add(ctx context.Context, entry []byte) func() (uint64, error) {
	f := t.add(ctx, tessera.NewEntry(entry))
	return func() (uint64, error) {
		i, err := f()
		return i.Index, err
	}
}

func (t *tesseraLog) Published(ctx context.Context) (uint64, error) {
	cp, err := t.reader.ReadCheckpoint(ctx)
	if err != nil {
		return 0, err
	}
	// The checkpoint body is origin, size, root: the size is line two.
	lines := strings.SplitN(string(cp), "\n", 3)
	if len(lines) < 3 {
		return 0, fmt.Errorf("short checkpoint")
	}
	return strconv.ParseUint(lines[1], 10, 64)
}

func (t *tesseraLog) Disk(ctx context.Context) (int64, string, error) {
	switch t.driver {
	case "posix":
		out, err := exec.Command("du", "-s", "--block-size=1", t.dir).Output()
		if err != nil {
			return 0, "", err
		}
		n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
		apparent, _ := exec.Command("du", "-sb", t.dir).Output()
		files, _ := exec.Command("sh", "-c", "find "+t.dir+" -type f | wc -l").Output()
		return n, fmt.Sprintf("du allocated blocks; apparent %s bytes in %s files",
			strings.Fields(string(apparent))[0], strings.TrimSpace(string(files))), err
	default:
		if _, err := t.db.ExecContext(ctx, "ANALYZE TABLE Subtree, TiledLeaves, TreeState, Checkpoint"); err != nil {
			return 0, "", err
		}
		var n int64
		err := t.db.QueryRowContext(ctx, `SELECT SUM(data_length + index_length) FROM information_schema.tables
			WHERE table_schema = 'tessera_bench'`).Scan(&n)
		return n, "InnoDB data_length + index_length (information_schema)", err
	}
}

func (t *tesseraLog) Close(ctx context.Context) error {
	return t.shutdown(ctx)
}
