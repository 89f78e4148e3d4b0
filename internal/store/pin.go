package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Errors of PinBatch, for errors.Is.
var (
	// ErrBatchBeforeLog: the batch's first transaction was journaled
	// without a checkpoint (before the evidence log), so its anchor carries
	// the batch's own Merkle root.
	ErrBatchBeforeLog = errors.New("its first transaction predates the evidence log")
	// ErrBatchNotInLog: some of the batch's evidence are not in the log yet.
	ErrBatchNotInLog = errors.New("not in the evidence log yet")
	// ErrEmptyBatch: the batch holds no evidence.
	ErrEmptyBatch = errors.New("the batch holds no evidence")
)

// SignCheckpoint signs the checkpoint of the log's first size entries,
// whose root is root, and returns the signed note.
type SignCheckpoint func(size uint64, root [32]byte) ([]byte, error)

// PinBatch fixes the checkpoint a batch's anchor commits to and returns
// it. A batch pinned already gets its checkpoint back, with nothing
// written. Otherwise, in one transaction under the log's lock: the
// evidence waiting up to the batch's last one are taken into the log (at
// most max), the batch is pinned to the latest checkpoint when that holds
// its evidence, or else to a checkpoint of the log's new size, which sign
// signs and which is saved under vkey as SaveCheckpoint saves one. When
// anything fails, sign included, the store is left as it was.
//
// It fails with ErrBatchBeforeLog or ErrEmptyBatch, and with
// ErrBatchNotInLog when evidence of the batch are still not in the log
// after max were taken in: those taken in stay, nothing is pinned.
func (s Log) PinBatch(ctx context.Context, batchID int64, max int, vkey string, sign SignCheckpoint) (LogCheckpoint, error) {
	c, err := pinnedCheckpoint(ctx, s.r, batchID)
	if !errors.Is(err, errUnpinned) {
		return c, pinError(batchID, err)
	}
	watermark, err := s.intakeWatermark(ctx)
	if err != nil {
		return c, pinError(batchID, err)
	}
	var p pinning
	err = s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "log"); err != nil {
			return err
		}
		var err error
		p, err = s.pinIn(ctx, tx, batchID, watermark, max, vkey, sign)
		return err
	})
	if err != nil {
		return LogCheckpoint{}, pinError(batchID, err)
	}
	s.logHashes.putAll(p.written)
	if p.missing > 0 {
		return LogCheckpoint{}, fmt.Errorf("store: pin batch %d: %d of its evidence are %w", batchID, p.missing, ErrBatchNotInLog)
	}
	if p.signed {
		s.notify()
	}
	return p.checkpoint, nil
}

// PinnedCheckpoint is the checkpoint the batch is pinned to, read without
// writing or locking: ok is false while it has none yet. It fails as
// PinBatch does for a batch journaled before the log or not found.
func (s Log) PinnedCheckpoint(ctx context.Context, batchID int64) (c LogCheckpoint, ok bool, err error) {
	c, err = pinnedCheckpoint(ctx, s.r, batchID)
	if errors.Is(err, errUnpinned) {
		return LogCheckpoint{}, false, nil
	}
	return c, err == nil, pinError(batchID, err)
}

func pinError(batchID int64, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: pin batch %d: %w", batchID, err)
}

// pinning is what PinBatch did in its transaction.
type pinning struct {
	appended
	checkpoint LogCheckpoint // the checkpoint the batch commits to
	signed     bool          // checkpoint was signed and saved by it
	missing    int           // evidence of the batch not in the log: nothing pinned
}

// pinIn is PinBatch's transaction, reading what the batch commits to
// again under the log's lock: another worker may have pinned it since.
func (s Log) pinIn(ctx context.Context, tx *txn, batchID, watermark int64, max int, vkey string, sign SignCheckpoint) (pinning, error) {
	var p pinning
	c, err := pinnedCheckpoint(ctx, tx, batchID)
	if !errors.Is(err, errUnpinned) {
		p.checkpoint = c
		return p, err
	}
	top, err := batchTop(ctx, tx, batchID)
	if err != nil {
		return p, err
	}
	if top == 0 {
		return p, ErrEmptyBatch
	}
	if p.appended, err = s.appendIn(ctx, tx, min(top, watermark), max); err != nil {
		return p, err
	}
	need, missing, err := batchSpanUpTo(ctx, tx, batchID, top)
	if err != nil || missing > 0 {
		p.missing = missing
		return p, err
	}
	if p.checkpoint, p.signed, err = checkpointFor(ctx, tx, need, p.appended, vkey, sign); err != nil {
		return p, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE batches SET log_size = ? WHERE id = ? AND COALESCE(log_size, 0) = 0`, int64(p.checkpoint.Size), batchID)
	return p, err
}

// checkpointFor is the checkpoint a batch needing the log's first need
// entries commits to: the latest when it holds them, else one of the
// log's size after a (signed reports it was signed and saved now).
func checkpointFor(ctx context.Context, tx *txn, need uint64, a appended, vkey string, sign SignCheckpoint) (c LogCheckpoint, signed bool, err error) {
	c, err = readCheckpoint(ctx, tx, `ORDER BY size DESC LIMIT 1`)
	if err == nil && c.Size >= need {
		return c, false, nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return c, false, err
	}
	note, err := sign(a.size, a.root)
	if err != nil {
		return c, false, err
	}
	c = LogCheckpoint{Size: a.size, Root: a.root, Note: note, CreatedAt: time.Now()}
	if err := saveCheckpoint(ctx, tx, c, vkey); err != nil {
		return c, false, err
	}
	// A checkpoint of this size saved before stays: it is the one pinned.
	c, err = readCheckpoint(ctx, tx, `WHERE size = ?`, int64(a.size))
	return c, err == nil, err
}

// errUnpinned: the batch commits to no checkpoint yet, and none of its
// transactions was journaled without one.
var errUnpinned = errors.New("no checkpoint yet")

// pinnedCheckpoint is the checkpoint the batch commits to, read through q:
// errUnpinned when it has none yet, ErrBatchBeforeLog when it has none
// and its first transaction was journaled without one.
func pinnedCheckpoint(ctx context.Context, q querier, batchID int64) (LogCheckpoint, error) {
	var (
		c                LogCheckpoint
		pinned, size, at sql.NullInt64
		journaled        int64
		root             []byte
		note             sql.NullString
	)
	err := q.QueryRowContext(ctx, `SELECT b.log_size, (SELECT COUNT(*) FROM tx_refs t WHERE t.batch_id = b.id),
			c.size, c.root, c.note, c.created_at
		FROM batches b LEFT JOIN log_checkpoints c ON c.size = b.log_size WHERE b.id = ?`, batchID).
		Scan(&pinned, &journaled, &size, &root, &note, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return c, fmt.Errorf("batch %d: %w", batchID, ErrNotFound)
	case err != nil:
		return c, err
	case pinned.Int64 > 0 && !size.Valid:
		return c, fmt.Errorf("its checkpoint of %d entries: %w", pinned.Int64, ErrNotFound)
	case pinned.Int64 > 0:
		c.Size, c.Note, c.CreatedAt = uint64(size.Int64), []byte(note.String), fromMS(at.Int64)
		copy(c.Root[:], root)
		return c, nil
	case journaled > 0:
		return c, ErrBatchBeforeLog
	}
	return c, errUnpinned
}
