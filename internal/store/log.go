package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
)

// Log owns the evidence log (docs/log.md): its entries (log_entries), the
// tree's stored hashes (log_hashes), the signed checkpoints
// (log_checkpoints) and its state (log_state), and reads the batches'
// log_size and account columns to say which checkpoint an anchor commits to,
// which PinBatch writes (pin.go).
type Log struct{ *db }

// The evidence log (migration 12, docs/log.md). AppendLog takes evidence
// committed since its last call into the log in intake order, each at the
// next index: on SQLite its transaction is the one writer; on PostgreSQL it
// reads no further than the intake watermark (lanes.go), so an evidence
// whose transaction commits late is taken in after the ones before it, never
// skipped. Indexes are therefore gap-free and never change. The tree's
// stored hashes are written in the same transaction, so the tiles any
// checkpoint refers to are in the store once the checkpoint is.

// ErrLogKey is returned when a checkpoint is signed with another key than
// the one the log was first signed with.
var ErrLogKey = errors.New("store: the log is signed with another key")

// LogCheckpoint is one signed checkpoint.
type LogCheckpoint struct {
	Size      uint64
	Root      [32]byte
	Note      []byte // the signed note (WitnessedCheckpoint: with the quorum's cosignature lines)
	CreatedAt time.Time
	// WitnessedAt is when the quorum of witnesses had cosigned it
	// (WitnessedCheckpoint only).
	WitnessedAt time.Time
}

// logHashCache keeps stored hashes this process read or wrote: a stored
// hash never changes, and each append reads the tree's right edge, which the
// append before it wrote.
type logHashCache struct {
	mu sync.Mutex
	m  map[int64]tlog.Hash
}

// logHashCacheSize bounds the cache (about 4 MiB); when full it starts over.
const logHashCacheSize = 1 << 16

func (c *logHashCache) get(ids []int64) (found []tlog.Hash, missing []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	found = make([]tlog.Hash, len(ids))
	for i, id := range ids {
		h, ok := c.m[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		found[i] = h
	}
	return found, missing
}

func (c *logHashCache) put(ids []int64, hs []tlog.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(ids) > logHashCacheSize {
		c.m = make(map[int64]tlog.Hash, len(ids))
	}
	for i, id := range ids {
		c.m[id] = hs[i]
	}
}

// putAll caches hs, stored hashes by id, once written.
func (c *logHashCache) putAll(hs map[int64]tlog.Hash) {
	ids := make([]int64, 0, len(hs))
	vs := make([]tlog.Hash, 0, len(hs))
	for id, h := range hs {
		ids, vs = append(ids, id), append(vs, h)
	}
	c.put(ids, vs)
}

// AppendLog takes up to max evidence committed since the last append into
// the log, in one transaction, and returns the log's size and root after it
// and how many it took (0 when nothing was waiting).
func (s Log) AppendLog(ctx context.Context, max int) (size uint64, root [32]byte, taken int, err error) {
	watermark, err := s.intakeWatermark(ctx)
	if err != nil {
		return 0, root, 0, fmt.Errorf("store: append to the log: %w", err)
	}
	var a appended
	err = s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "log"); err != nil {
			return err
		}
		var err error
		a, err = s.appendIn(ctx, tx, watermark, max)
		return err
	})
	if err != nil {
		return 0, [32]byte{}, 0, fmt.Errorf("store: append to the log: %w", err)
	}
	s.logHashes.putAll(a.written)
	return a.size, a.root, a.taken, nil
}

// appended is what one append did in its transaction.
type appended struct {
	size  uint64   // the log's size after it
	root  [32]byte // the log's root after it (zero while the log is empty)
	taken int      // evidence taken in
	// written are the stored hashes it wrote: logReader reads them first
	// within the transaction, and the cache takes them once it commits.
	written map[int64]tlog.Hash
}

// logEntry is an evidence on its way into the log.
type logEntry struct {
	seq   int64
	entry [32]byte
}

// appendIn takes up to max evidence with an intake sequence up to upTo,
// past the last one the log holds, into the log within tx, whose caller
// holds the log's lock.
func (s Log) appendIn(ctx context.Context, tx *txn, upTo int64, max int) (appended, error) {
	a := appended{written: map[int64]tlog.Hash{}}
	var n, seq int64
	if err := tx.QueryRowContext(ctx, `SELECT size, seq FROM log_state WHERE id = 1`).Scan(&n, &seq); err != nil {
		return a, err
	}
	evs, err := waitingEntries(ctx, tx, seq, upTo, max)
	if err != nil {
		return a, err
	}
	reader := s.logReader(ctx, tx, a.written)
	if len(evs) > 0 {
		for i, ev := range evs {
			hs, err := tlog.StoredHashesForRecordHash(n+int64(i), tlog.RecordHash(ev.entry[:]), reader)
			if err != nil {
				return a, err
			}
			first := tlog.StoredHashIndex(0, n+int64(i))
			for j, h := range hs {
				a.written[first+int64(j)] = h
			}
		}
		if err := writeEntries(ctx, tx, n, evs); err != nil {
			return a, err
		}
		if err := writeHashes(ctx, tx, a.written); err != nil {
			return a, err
		}
		n += int64(len(evs))
		if _, err := tx.ExecContext(ctx, `UPDATE log_state SET size = ?, seq = ? WHERE id = 1`, n, evs[len(evs)-1].seq); err != nil {
			return a, err
		}
		a.taken = len(evs)
	}
	a.size = uint64(n)
	if n > 0 {
		if a.root, err = tlog.TreeHash(n, reader); err != nil {
			return a, err
		}
	}
	return a, nil
}

// waitingEntries reads the log entries of up to max evidence with an intake
// sequence in (after, upTo], in intake order.
func waitingEntries(ctx context.Context, tx *txn, after, upTo int64, max int) ([]logEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, salt, digest FROM evidence WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, after, upTo, max)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []logEntry
	for rows.Next() {
		var (
			t            logEntry
			salt, digest []byte
		)
		if err := rows.Scan(&t.seq, &salt, &digest); err != nil {
			return nil, err
		}
		var d [32]byte
		copy(d[:], digest)
		t.entry = evlog.EntryOf(salt, d)
		evs = append(evs, t)
	}
	return evs, rows.Err()
}

// logChunk is how many tiles one query of the log reads.
const logChunk = 500

const itemSize = 32 // an entry's or a stored hash's bytes

// logReader reads stored hashes: those written by the transaction under
// way (pending), then the cache, then the store through q.
func (s Log) logReader(ctx context.Context, q querier, pending map[int64]tlog.Hash) tlog.HashReaderFunc {
	return func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		var rest []int64
		for i, id := range ids {
			if h, ok := pending[id]; ok {
				out[i] = h
				continue
			}
			rest = append(rest, id)
		}
		if len(rest) == 0 {
			return out, nil
		}
		cached, missing := s.logHashes.get(rest)
		if len(missing) > 0 {
			read, err := readLogHashes(ctx, q, missing)
			if err != nil {
				return nil, err
			}
			s.logHashes.put(missing, read)
			byID := make(map[int64]tlog.Hash, len(missing))
			for i, id := range missing {
				byID[id] = read[i]
			}
			for i, id := range rest {
				if h, ok := byID[id]; ok {
					cached[i] = h
				}
			}
		}
		j := 0
		for i, id := range ids {
			if _, ok := pending[id]; ok {
				continue
			}
			out[i] = cached[j]
			j++
		}
		return out, nil
	}
}

func readLogHashes(ctx context.Context, q querier, ids []int64) ([]tlog.Hash, error) {
	var leaves, inner []int64
	for _, id := range ids {
		level, n := tlog.SplitStoredHashIndex(id)
		if level == 0 {
			leaves = append(leaves, n)
		} else {
			inner = append(inner, innerIndex(id))
		}
	}
	entries, hashes := map[int64][32]byte{}, map[int64][32]byte{}
	if err := tileItems(ctx, q, "log_entry_tiles", leaves, entries); err != nil {
		return nil, err
	}
	if err := tileItems(ctx, q, "log_hash_tiles", inner, hashes); err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(ids))
	for i, id := range ids {
		var (
			h  [32]byte
			ok bool
		)
		if level, n := tlog.SplitStoredHashIndex(id); level == 0 {
			var e [32]byte
			if e, ok = entries[n]; ok {
				h = tlog.RecordHash(e[:])
			}
		} else {
			h, ok = hashes[innerIndex(id)]
		}
		if !ok {
			return nil, fmt.Errorf("stored hash %d of the log: %w", id, ErrNotFound)
		}
		out[i] = h
	}
	return out, nil
}

// LogHashes reads stored hashes of the log by their tlog.StoredHashIndex.
func (s Log) LogHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	hs, err := s.logReader(ctx, s.r, nil)(ids)
	if err != nil {
		return nil, fmt.Errorf("store: log hashes: %w", err)
	}
	return hs, nil
}

// LogHashReader is LogHashes as a tlog.HashReader bound to ctx.
func (s Log) LogHashReader(ctx context.Context) tlog.HashReader {
	return s.logReader(ctx, s.r, nil)
}

// LogSize is the number of entries in the log.
func (s Log) LogSize(ctx context.Context) (uint64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT size FROM log_state WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: log size: %w", err)
	}
	return uint64(n), nil
}

// LogEntries returns the entries at indexes [from, to).
func (s Log) LogEntries(ctx context.Context, from, to uint64) ([][32]byte, error) {
	out, err := entryRange(ctx, s.r, int64(from), int64(to))
	if err != nil {
		return nil, fmt.Errorf("store: log entries: %w", err)
	}
	return out, nil
}

// SaveCheckpoint stores a signed checkpoint. The first one fixes the key
// that signs the log (vkey): a checkpoint signed with another fails with
// ErrLogKey. Saving a checkpoint of a size already saved keeps the first.
func (s Log) SaveCheckpoint(ctx context.Context, c LogCheckpoint, vkey string) error {
	err := s.tx(ctx, func(tx *txn) error { return saveCheckpoint(ctx, tx, c, vkey) })
	if err != nil {
		return fmt.Errorf("store: save checkpoint %d: %w", c.Size, err)
	}
	s.notify()
	return nil
}

// saveCheckpoint is SaveCheckpoint within tx.
func saveCheckpoint(ctx context.Context, tx *txn, c LogCheckpoint, vkey string) error {
	var have string
	if err := tx.QueryRowContext(ctx, `SELECT vkey FROM log_state WHERE id = 1`).Scan(&have); err != nil {
		return err
	}
	switch have {
	case vkey:
	case "":
		if _, err := tx.ExecContext(ctx, `UPDATE log_state SET vkey = ? WHERE id = 1 AND vkey = ''`, vkey); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w (%s), not %s", ErrLogKey, have, vkey)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO log_checkpoints (size, root, note, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (size) DO NOTHING`, int64(c.Size), c.Root[:], string(c.Note), ms(c.CreatedAt))
	return err
}

// LogKey is the verifier key of the log's signing key ("" before the first
// checkpoint).
func (s Log) LogKey(ctx context.Context) (string, error) {
	var k string
	if err := s.r.QueryRowContext(ctx, `SELECT vkey FROM log_state WHERE id = 1`).Scan(&k); err != nil {
		return "", fmt.Errorf("store: log key: %w", err)
	}
	return k, nil
}

// LatestCheckpoint is the largest checkpoint signed; ErrNotFound before the first.
func (s Log) LatestCheckpoint(ctx context.Context) (LogCheckpoint, error) {
	return readCheckpoint(ctx, s.r, `ORDER BY size DESC LIMIT 1`)
}

// CheckpointAt is the checkpoint of the given size, or ErrNotFound.
func (s Log) CheckpointAt(ctx context.Context, size uint64) (LogCheckpoint, error) {
	return readCheckpoint(ctx, s.r, `WHERE size = ?`, int64(size))
}

// CheckpointsAt returns the stored checkpoints of the given sizes, by size.
func (s Log) CheckpointsAt(ctx context.Context, sizes []uint64) (map[uint64][]byte, error) {
	out := make(map[uint64][]byte, len(sizes))
	for _, n := range sizes {
		if _, ok := out[n]; ok {
			continue
		}
		c, err := s.CheckpointAt(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n] = c.Note
	}
	return out, nil
}

// readCheckpoint reads the checkpoint the query's tail selects through q.
func readCheckpoint(ctx context.Context, q querier, tail string, args ...any) (LogCheckpoint, error) {
	var (
		c       LogCheckpoint
		size    int64
		root    []byte
		note    string
		created int64
	)
	err := q.QueryRowContext(ctx, `SELECT size, root, note, created_at FROM log_checkpoints `+tail, args...).Scan(&size, &root, &note, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("store: checkpoint: %w", ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("store: checkpoint: %w", err)
	}
	c.Size, c.Note, c.CreatedAt = uint64(size), []byte(note), fromMS(created)
	copy(c.Root[:], root)
	return c, nil
}

// LogIndexOf is an evidence's index in the log, ok false while it is not in it.
func (s Log) LogIndexOf(ctx context.Context, evidenceID string) (idx uint64, ok bool, err error) {
	var seq int64
	err = s.r.QueryRowContext(ctx, `SELECT seq FROM evidence WHERE id = ?`, evidenceID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	var n int64
	if err == nil {
		n, ok, err = indexOfSeq(ctx, s.r, seq)
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: log index of %s: %w", evidenceID, err)
	}
	return uint64(n), ok, nil
}

// BatchLogSpan is the smallest log size that holds every evidence of a
// batch (its largest index + 1), and how many of its evidence are not in
// the log yet.
func (s Log) BatchLogSpan(ctx context.Context, batchID int64) (need uint64, missing int, err error) {
	need, missing, err = batchSpan(ctx, s.r, batchID)
	if err != nil {
		return 0, 0, fmt.Errorf("store: log span of batch %d: %w", batchID, err)
	}
	return need, missing, nil
}

// batchSpan is BatchLogSpan read through q.
func batchSpan(ctx context.Context, q querier, batchID int64) (need uint64, missing int, err error) {
	top, err := batchTop(ctx, q, batchID)
	if err != nil {
		return 0, 0, err
	}
	return batchSpanUpTo(ctx, q, batchID, top)
}

// batchSpanUpTo is batchSpan of a batch whose largest member is top
// (batchTop). When the log holds top it holds every member (it takes
// evidence in intake order), and the answer is top's index, read without
// going through the members.
func batchSpanUpTo(ctx context.Context, q querier, batchID, top int64) (need uint64, missing int, err error) {
	var logged int64
	if err := q.QueryRowContext(ctx, `SELECT seq FROM log_state WHERE id = 1`).Scan(&logged); err != nil {
		return 0, 0, err
	}
	if top > 0 && top <= logged {
		idx, ok, err := indexOfSeq(ctx, q, top)
		if err != nil || !ok {
			return 0, 0, err
		}
		return uint64(idx) + 1, 0, nil
	}
	// The log takes evidence in intake order: every evidence up to the
	// last one it took is in it, the others not yet.
	var (
		inLog sql.NullInt64
		miss  int64
	)
	err = q.QueryRowContext(ctx, `SELECT MAX(CASE WHEN m.seq <= l.seq THEN m.seq END), COUNT(CASE WHEN m.seq > l.seq THEN 1 END)
		FROM `+batchMembers("?1")+` m, log_state l WHERE l.id = 1`, batchID).Scan(&inLog, &miss)
	if err != nil || !inLog.Valid {
		return 0, int(miss), err
	}
	idx, ok, err := indexOfSeq(ctx, q, inLog.Int64)
	if err != nil || !ok {
		return 0, int(miss), err
	}
	return uint64(idx) + 1, int(miss), nil
}

// BatchCheckpoint fixes the checkpoint a batch's anchor commits to, once:
// the first size set stays (a retried submit rebroadcasts the transaction
// it journaled for it). It returns the size the batch commits to.
func (s Log) BatchCheckpoint(ctx context.Context, batchID int64, size uint64) (uint64, error) {
	var got int64
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE batches SET log_size = ? WHERE id = ? AND log_size IS NULL`, int64(size), batchID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT log_size FROM batches WHERE id = ?`, batchID).Scan(&got)
	})
	if err != nil {
		return 0, fmt.Errorf("store: checkpoint of batch %d: %w", batchID, err)
	}
	return uint64(got), nil
}

// AdvanceBatchCheckpoint moves a batch that is not confirmed to a bigger
// checkpoint, right before a transaction of it is signed on a place of its
// own on the chain while none of its earlier ones can land
// (chains.Anchor.Advance). It never moves a batch back, nor one without a
// checkpoint, and returns the size the batch commits to.
func (s Log) AdvanceBatchCheckpoint(ctx context.Context, batchID int64, size uint64) (uint64, error) {
	var got sql.NullInt64
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE batches SET log_size = ? WHERE id = ? AND log_size < ? AND state <> ?`,
			int64(size), batchID, int64(size), BatchConfirmed); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT log_size FROM batches WHERE id = ?`, batchID).Scan(&got)
	})
	if err != nil {
		return 0, fmt.Errorf("store: advance the checkpoint of batch %d: %w", batchID, err)
	}
	return uint64(got.Int64), nil
}

// BatchLogSize is the checkpoint size a batch commits to, 0 when none (a
// batch first submitted before the log).
func (s Log) BatchLogSize(ctx context.Context, batchID int64) (uint64, error) {
	var n sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT log_size FROM batches WHERE id = ?`, batchID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: checkpoint of batch %d: %w", batchID, err)
	}
	return uint64(n.Int64), nil
}

// LogAnchor is a confirmed anchor of a log checkpoint.
type LogAnchor struct {
	BatchID   int64
	Chain     string
	Network   string
	Account   string
	TxRef     string
	Block     uint64
	BlockHash string
	BlockTime time.Time
	Finality  string
	Size      uint64 // the checkpoint it commits to
}

// LogAnchors lists the confirmed anchors of log checkpoints, oldest batch first.
func (s Log) LogAnchors(ctx context.Context) ([]LogAnchor, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, chain, COALESCE(network, ''), account, COALESCE(tx_ref, ''), COALESCE(block, 0),
			COALESCE(block_hash, ''), COALESCE(block_time, 0), COALESCE(finality, ''), log_size
		FROM batches WHERE state = ? AND log_size IS NOT NULL ORDER BY id`, BatchConfirmed)
	if err != nil {
		return nil, fmt.Errorf("store: log anchors: %w", err)
	}
	defer rows.Close()
	var out []LogAnchor
	for rows.Next() {
		var (
			a      LogAnchor
			bt, sz int64
		)
		if err := rows.Scan(&a.BatchID, &a.Chain, &a.Network, &a.Account, &a.TxRef, &a.Block, &a.BlockHash, &bt, &a.Finality, &sz); err != nil {
			return nil, fmt.Errorf("store: log anchors: %w", err)
		}
		a.BlockTime, a.Size = fromMS(bt), uint64(sz)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Inclusion is the RFC 6962 inclusion proof of the entry at index in the
// log's first size entries, leaf sibling first.
func (s Log) Inclusion(ctx context.Context, index, size uint64) ([][32]byte, error) {
	p, err := tlog.ProveRecord(int64(size), int64(index), s.LogHashReader(ctx))
	if err != nil {
		return nil, fmt.Errorf("store: inclusion of %d in %d: %w", index, size, err)
	}
	return hashList(p), nil
}

// Consistency is the RFC 6962 consistency proof from the log's first m
// entries to its first n.
func (s Log) Consistency(ctx context.Context, m, n uint64) ([][32]byte, error) {
	if m == n {
		return nil, nil
	}
	p, err := tlog.ProveTree(int64(n), int64(m), s.LogHashReader(ctx))
	if err != nil {
		return nil, fmt.Errorf("store: consistency from %d to %d: %w", m, n, err)
	}
	return hashList(p), nil
}

func hashList(hs []tlog.Hash) [][32]byte {
	out := make([][32]byte, len(hs))
	for i, h := range hs {
		out[i] = h
	}
	return out
}

// BatchLeafHashes are the leaf hashes of a batch's own Merkle tree (batches
// whose anchor carries their root, before the log), in leaf order.
func (s Log) BatchLeafHashes(ctx context.Context, batchID int64) ([][32]byte, error) {
	t, err := s.batchTree(ctx, s.r, batchID)
	if err != nil {
		return nil, err
	}
	hs := t.LeafHashes()
	out := make([][32]byte, len(hs))
	for i, h := range hs {
		out[i] = h
	}
	return out, nil
}

// Checkpoints lists every checkpoint signed, smallest first.
func (s Log) Checkpoints(ctx context.Context) ([]LogCheckpoint, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT size, root, note, created_at FROM log_checkpoints ORDER BY size`)
	if err != nil {
		return nil, fmt.Errorf("store: checkpoints: %w", err)
	}
	defer rows.Close()
	var out []LogCheckpoint
	for rows.Next() {
		var (
			c        LogCheckpoint
			size, at int64
			root     []byte
			note     string
		)
		if err := rows.Scan(&size, &root, &note, &at); err != nil {
			return nil, fmt.Errorf("store: checkpoints: %w", err)
		}
		c.Size, c.Note, c.CreatedAt = uint64(size), []byte(note), fromMS(at)
		copy(c.Root[:], root)
		out = append(out, c)
	}
	return out, rows.Err()
}
