package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Witnesses' cosignatures of the log's checkpoints (migration 14,
// docs/log.md, Witnesses): each witness's cosignature line of a checkpoint
// in log_cosignatures, the lines that make the quorum on the checkpoint
// once it is reached (log_checkpoints.cosigned), and the size each witness
// cosigned last (log_witnesses), where the next request's proof starts.

// WitnessSize is the size the witness cosigned last or said it holds; ok
// false before it answered.
func (s Log) WitnessSize(ctx context.Context, witness string) (size uint64, ok bool, err error) {
	var n int64
	err = s.r.QueryRowContext(ctx, `SELECT size FROM log_witnesses WHERE witness = ?`, witness).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: witness %s: %w", witness, err)
	}
	return uint64(n), true, nil
}

// SetWitnessSize records the size a witness cosigned, or said it holds.
func (s Log) SetWitnessSize(ctx context.Context, witness string, size uint64) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO log_witnesses (witness, size, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (witness) DO UPDATE SET size = excluded.size, updated_at = excluded.updated_at`,
		witness, int64(size), ms(time.Now()))
	if err != nil {
		return fmt.Errorf("store: witness %s: %w", witness, err)
	}
	return nil
}

// SaveCosignature keeps a witness's cosignature line of the checkpoint of
// size (the first one kept per witness and size) and returns every
// witness's line of that size, by witness.
func (s Log) SaveCosignature(ctx context.Context, size uint64, witness, line string) (map[string]string, error) {
	out := map[string]string{}
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO log_cosignatures (size, witness, line, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (size, witness) DO NOTHING`, int64(size), witness, line, ms(time.Now())); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT witness, line FROM log_cosignatures WHERE size = ?`, int64(size))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w, l string
			if err := rows.Scan(&w, &l); err != nil {
				return err
			}
			out[w] = l
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: cosignature of %d by %s: %w", size, witness, err)
	}
	return out, nil
}

// MarkWitnessed records the cosignature lines that make the quorum of the
// checkpoint of size (kept once: the first quorum stands).
func (s Log) MarkWitnessed(ctx context.Context, size uint64, lines []string) error {
	_, err := s.w.ExecContext(ctx, `UPDATE log_checkpoints SET cosigned = ?, witnessed_at = ? WHERE size = ? AND cosigned = ''`,
		strings.Join(lines, ""), ms(time.Now()), int64(size))
	if err != nil {
		return fmt.Errorf("store: witnessed checkpoint %d: %w", size, err)
	}
	s.notify()
	return nil
}

// WitnessedCheckpoint is the newest checkpoint whose quorum of witnesses
// cosigned it, its Note carrying their lines; ErrNotFound before the
// first.
func (s Log) WitnessedCheckpoint(ctx context.Context) (LogCheckpoint, error) {
	var (
		c              LogCheckpoint
		size, at, wat  int64
		root           []byte
		note, cosigned string
	)
	err := s.r.QueryRowContext(ctx, `SELECT size, root, note, cosigned, created_at, witnessed_at FROM log_checkpoints
		WHERE cosigned <> '' ORDER BY size DESC LIMIT 1`).Scan(&size, &root, &note, &cosigned, &at, &wat)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("store: witnessed checkpoint: %w", ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("store: witnessed checkpoint: %w", err)
	}
	c.Size, c.Note, c.CreatedAt, c.WitnessedAt = uint64(size), []byte(note+cosigned), fromMS(at), fromMS(wat)
	copy(c.Root[:], root)
	return c, nil
}

// NewestCosignedBy is the largest size above size that some witness but
// witness cosigned without the quorum being reached yet (ok false: none):
// a witness that catches up cosigns it, so the quorum meets at one size
// even when witnesses answer at different paces.
func (s Log) NewestCosignedBy(ctx context.Context, witness string, size uint64) (uint64, bool, error) {
	var n sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT max(s.size) FROM log_cosignatures s JOIN log_checkpoints c ON c.size = s.size
		WHERE s.size > ? AND s.witness <> ? AND c.cosigned = ''`, int64(size), witness).Scan(&n)
	if err != nil {
		return 0, false, fmt.Errorf("store: cosigned sizes: %w", err)
	}
	return uint64(n.Int64), n.Valid, nil
}
