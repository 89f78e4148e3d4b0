package store

import (
	"context"
	"database/sql"
	"os"
	"sync"
	"time"
)

// SQLite copies its write-ahead log back into the database file at a
// checkpoint. Left to itself it does so inside the commit that grows the
// log past 1,000 pages, so one intake commit in a few hundred waited for the
// copy and its fsyncs: at 1,000 requests a second those commits held the
// writer 4–93 ms and were intake's p99 (docs/benchmarks.md, 2026-11-27).
// The writer's connection therefore never checkpoints; walCheckpointer
// does, on a connection of its own, beside the writer (a PASSIVE checkpoint
// takes no write lock).

// walCheckpointBytes is the log size at which a checkpoint runs (about
// SQLite's own 1,000 pages of 4 KiB), walCheckpointEvery how often the size
// is looked at.
const (
	walCheckpointBytes = 4 << 20
	walCheckpointEvery = 100 * time.Millisecond
)

// walCheckpointer checkpoints the SQLite file at path through conn while
// its log is walCheckpointBytes or more, until stop.
type walCheckpointer struct {
	conn *sql.DB
	wal  string
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
	err  error
}

func startWALCheckpointer(path string, conn *sql.DB) *walCheckpointer {
	c := &walCheckpointer{conn: conn, wal: path + "-wal", stop: make(chan struct{})}
	c.done.Add(1)
	go c.run()
	return c
}

func (c *walCheckpointer) run() {
	defer c.done.Done()
	t := time.NewTicker(walCheckpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if fi, err := os.Stat(c.wal); err != nil || fi.Size() < walCheckpointBytes {
			continue
		}
		// A checkpoint that cannot finish (a reader still needs older
		// pages) is taken up again at the next tick.
		_, _ = c.conn.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// close stops the checkpointer and closes its connection; closing again
// returns the first close's error.
func (c *walCheckpointer) close() error {
	c.once.Do(func() {
		close(c.stop)
		c.done.Wait()
		c.err = c.conn.Close()
	})
	return c.err
}
