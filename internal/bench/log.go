package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/internal/node"
)

// LogReport is what the evidence log did with one phase's evidence: how
// long each took from intake to being in a signed checkpoint, and what the
// log's own tables grew by. It is read from keeper's store after the phase,
// so it measures what the store recorded, not what a client saw.
type LogReport struct {
	CheckpointIntervalMS float64 `json:"checkpoint_interval_ms"` // KEEPER_LOG_CHECKPOINT_INTERVAL of the stack
	Evidence             int     `json:"evidence"`               // the phase's evidence
	InCheckpoint         int     `json:"in_checkpoint"`          // of them, in a signed checkpoint by the end
	// IntakeToCheckpoint is, per evidence, its created_at (intake) to the
	// created_at of the first checkpoint signed whose size exceeds its log
	// index: both stamped in milliseconds by the store's process.
	IntakeToCheckpoint Latency `json:"intake_to_checkpoint"`
	Checkpoints        int     `json:"checkpoints"` // signed from the phase's first intake until its last evidence was in one
	// Bytes is how much the log's tables (log_entry_tiles, log_hash_tiles,
	// log_checkpoints, log_state, their indexes) grew over the phase:
	// SQLite pages (dbstat), PostgreSQL pg_total_relation_size.
	Bytes            int64   `json:"bytes_growth"`
	BytesPerEvidence float64 `json:"bytes_per_evidence"`
	// Witnesses is the log's witnesses (KEEPER_LOG_WITNESSES, or
	// --witnesses' local ones) and CheckpointToQuorum, for each checkpoint
	// signed in the phase, its signature to the first time a checkpoint
	// that holds it carried the witnesses' quorum (witnessed_at): what a
	// receipt of its evidence waits beyond the anchors. Witnessed counts
	// the checkpoints that got there by the end.
	Witnesses          int     `json:"witnesses,omitempty"`
	Witnessed          int     `json:"witnessed,omitempty"`
	CheckpointToQuorum Latency `json:"checkpoint_to_quorum,omitzero"`
}

// logDB is a read-only view of the stack's store for the log's figures,
// which the store does not export: opened on first use, closed with the
// stack.
func (s *stack) logDB() (*sql.DB, bool, error) {
	if s.rawDB != nil {
		return s.rawDB, s.cfg.StoreURL != "", nil
	}
	var (
		db  *sql.DB
		err error
	)
	if s.cfg.StoreURL != "" {
		db, err = sql.Open("pgx", s.cfg.StoreURL)
	} else {
		db, err = sql.Open("sqlite", "file:"+node.StoreFile(s.cfg.DataDir)+"?mode=ro&_pragma=busy_timeout(10000)")
	}
	if err != nil {
		return nil, false, fmt.Errorf("bench: open keeper's store to read its log: %w", err)
	}
	db.SetMaxOpenConns(1)
	s.rawDB = db
	s.cleanup = append(s.cleanup, func() { db.Close() })
	return db, s.cfg.StoreURL != "", nil
}

// logBytes is the bytes the log's tables and their indexes take.
func (s *stack) logBytes(ctx context.Context) (int64, error) {
	db, postgres, err := s.logDB()
	if err != nil {
		return 0, err
	}
	var n int64
	if postgres {
		q := `SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT)
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN ('log_entry_tiles', 'log_hash_tiles', 'log_checkpoints', 'log_state')`
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return 0, fmt.Errorf("bench: size of the log's tables: %w", err)
		}
		return n, nil
	}
	// Every b-tree of the log's tables (the tables and their indexes), each
	// measured alone: dbstat reads only the b-tree its name constraint
	// names, where a constraint on several would read the whole file.
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE rootpage > 0 AND tbl_name IN ('log_entry_tiles', 'log_hash_tiles', 'log_checkpoints', 'log_state')`)
	if err != nil {
		return 0, fmt.Errorf("bench: the log's b-trees: %w", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, err
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, name := range names {
		var b int64
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(SUM(pgsize), 0) FROM dbstat('main', 1) WHERE name = ?`, name).Scan(&b); err != nil {
			return 0, fmt.Errorf("bench: size of %s: %w", name, err)
		}
		n += b
	}
	return n, nil
}

// checkpointTime is when a checkpoint of a size was signed.
type checkpointTime struct {
	size      int64
	at        int64 // Unix ms
	witnessed int64 // Unix ms the witnesses' quorum cosigned it (0: not yet)
}

// logLatency reads, for the evidence of w, how long each took from intake
// to the first checkpoint that holds it.
func (s *stack) logLatency(ctx context.Context, w window, rep *LogReport) error {
	db, postgres, err := s.logDB()
	if err != nil {
		return err
	}
	signed, err := checkpointTimes(ctx, db)
	if err != nil {
		return err
	}
	cps := earliestCovering(signed)
	arg := func(i int) string {
		if postgres {
			return "$" + strconv.Itoa(i)
		}
		return "?"
	}
	indexes, err := s.store.LogIndexes(ctx, w.after, w.upto)
	if err != nil {
		return fmt.Errorf("bench: the phase's log indexes: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, created_at FROM evidence WHERE seq > `+arg(1)+` AND seq <= `+arg(2), w.after, w.upto)
	if err != nil {
		return fmt.Errorf("bench: the phase's evidence: %w", err)
	}
	defer rows.Close()
	var (
		ds          []time.Duration
		first, last int64 = -1, -1 // the phase's first intake; when its last evidence was in a checkpoint (Unix ms)
	)
	for rows.Next() {
		var seq, created int64
		if err := rows.Scan(&seq, &created); err != nil {
			return err
		}
		idx, ok := indexes[seq]
		if !ok {
			idx = -1
		}
		rep.Evidence++
		if first < 0 || created < first {
			first = created
		}
		if idx < 0 {
			continue
		}
		if at, ok := firstHolding(cps, idx); ok {
			ds = append(ds, nonNegative(time.Duration(at-created)*time.Millisecond))
			last = max(last, at)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rep.InCheckpoint = len(ds)
	rep.IntakeToCheckpoint = summarize(ds)
	var quorum []time.Duration
	witnessed := earliestWitnessed(signed)
	for i, c := range signed {
		if c.at >= first && c.at <= last {
			rep.Checkpoints++
			if witnessed[i] > 0 {
				quorum = append(quorum, nonNegative(time.Duration(witnessed[i]-c.at)*time.Millisecond))
			}
		}
	}
	if ws, _, _ := s.cfg.LogWitnesses(); len(ws) > 0 {
		rep.Witnesses, rep.Witnessed, rep.CheckpointToQuorum = len(ws), len(quorum), summarize(quorum)
	}
	return nil
}

// earliestWitnessed is, per checkpoint of a list sorted by size, the
// earliest time a checkpoint at least as large carried the witnesses'
// quorum (0: none yet): the quorum meets at one size, not at every one.
func earliestWitnessed(cps []checkpointTime) []int64 {
	out := make([]int64, len(cps))
	var best int64
	for i := len(cps) - 1; i >= 0; i-- {
		if w := cps[i].witnessed; w > 0 && (best == 0 || w < best) {
			best = w
		}
		out[i] = best
	}
	return out
}

// checkpointTimes lists every signed checkpoint by size.
func checkpointTimes(ctx context.Context, db *sql.DB) ([]checkpointTime, error) {
	rows, err := db.QueryContext(ctx, `SELECT size, created_at, witnessed_at FROM log_checkpoints ORDER BY size`)
	if err != nil {
		return nil, fmt.Errorf("bench: the log's checkpoints: %w", err)
	}
	defer rows.Close()
	var cps []checkpointTime
	for rows.Next() {
		var c checkpointTime
		if err := rows.Scan(&c.size, &c.at, &c.witnessed); err != nil {
			return nil, err
		}
		cps = append(cps, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return cps, nil
}

// earliestCovering replaces each checkpoint's time, in a list sorted by
// size, with the earliest time among it and the larger ones: a larger
// checkpoint signed first (two signers) holds the smaller's indexes too.
func earliestCovering(cps []checkpointTime) []checkpointTime {
	cps = slices.Clone(cps)
	for i := len(cps) - 2; i >= 0; i-- {
		cps[i].at = min(cps[i].at, cps[i+1].at)
	}
	return cps
}

// firstHolding is when index idx was first in a signed checkpoint: the
// time of the smallest checkpoint larger than idx, in cps as
// earliestCovering left it.
func firstHolding(cps []checkpointTime, idx int64) (int64, bool) {
	i := sort.Search(len(cps), func(i int) bool { return cps[i].size > idx })
	if i == len(cps) {
		return 0, false
	}
	return cps[i].at, true
}

// logPhase measures one phase's log: call start before its load and finish
// once its evidence has settled.
type logPhase struct {
	st     *stack
	bytes0 int64
}

func startLogPhase(ctx context.Context, st *stack) (*logPhase, error) {
	b, err := st.logBytes(ctx)
	if err != nil {
		return nil, err
	}
	return &logPhase{st: st, bytes0: b}, nil
}

func (p *logPhase) finish(ctx context.Context, w window) (*LogReport, error) {
	rep := &LogReport{CheckpointIntervalMS: msOf(p.st.cfg.Log.CheckpointInterval)}
	if err := p.st.logLatency(ctx, w, rep); err != nil {
		return nil, err
	}
	b, err := p.st.logBytes(ctx)
	if err != nil {
		return nil, err
	}
	rep.Bytes = b - p.bytes0
	if rep.Evidence > 0 {
		rep.BytesPerEvidence = round2(float64(rep.Bytes) / float64(rep.Evidence))
	}
	return rep, nil
}
