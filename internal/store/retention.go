package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Maintenance owns what operators run on the store as a whole: retention,
// which moves old confirmed evidence to the receipts archive (archives,
// archived_evidence); redrive of dead-lettered batches (redrive.go); and the
// store's size on disk (size.go).
type Maintenance struct{ *db }

// Archive is one file of the receipts archive (docs/production.md, "Storage and
// retention"): the receipts of evidence moved out of the store.
type Archive struct {
	ID        int64
	File      string // the file's name in the archive directory
	Size      int    // receipts in it
	CreatedAt time.Time
}

// archiveScan is how many evidence rows one look for archivable evidence
// reads at a time.
const archiveScan = 1000

// ArchiveConfirmed moves up to limit confirmed evidence taken in before
// `before` out of the store, oldest first, in one transaction: write gets
// them, with their anchors and audit paths, and must have stored their
// receipts durably before it returns the archive file's name; then their
// rows are deleted and each id is noted as archived in that file. A batch
// that keeps other evidence keeps its leaf hashes, so their audit paths stay
// computable; a batch left empty goes, with its journaled transactions. It
// returns how many evidence moved (0: none older than `before` is
// confirmed). Evidence that is not confirmed (in flight, dead-lettered)
// stays, however old. Archiving is serialized across nodes.
func (s Maintenance) ArchiveConfirmed(ctx context.Context, before time.Time, limit int, write func([]Evidence) (string, error)) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "archive"); err != nil {
			return err
		}
		seqs, err := archivable(ctx, tx, ms(before), limit)
		if err != nil || len(seqs) == 0 {
			return err
		}
		evs := make([]Evidence, 0, len(seqs))
		batches := map[int64]int{} // evidence archived from each batch
		for _, seq := range seqs {
			ev, err := scanEvidence(tx.QueryRowContext(ctx, `SELECT `+evidenceCols+` FROM evidence WHERE seq = ?`, seq))
			if err != nil {
				return err
			}
			if err := s.loadAnchors(ctx, tx, &ev); err != nil {
				return err
			}
			for _, a := range ev.Anchors {
				batches[a.BatchID]++
			}
			evs = append(evs, ev)
		}
		file, err := write(evs)
		if err != nil {
			return fmt.Errorf("write the archive: %w", err)
		}
		for id, k := range batches {
			if err := s.keepLeaves(ctx, tx, id); err != nil {
				return err
			}
			if err := unspan(ctx, tx, id, k); err != nil {
				return err
			}
		}
		now := ms(time.Now())
		var archiveID int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO archives (file, size, created_at) VALUES (?, ?, ?) RETURNING id`, file, len(evs), now).Scan(&archiveID); err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO archived_evidence (id, archive_id) VALUES (?, ?)`, ev.ID, archiveID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE evidence_seq = ?`, ev.seq); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM evidence WHERE seq = ?`, ev.seq); err != nil {
				return err
			}
		}
		for id := range batches {
			var left int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM outbox WHERE batch_id = ? LIMIT 1) AS one`, id).Scan(&left); err != nil {
				return err
			}
			if left > 0 {
				continue
			}
			for _, q := range []string{`DELETE FROM tx_refs WHERE batch_id = ?`, `DELETE FROM confirm_waits WHERE batch_id = ?`,
				`DELETE FROM batch_spans WHERE batch_id = ?`, `DELETE FROM batches WHERE id = ?`} {
				if _, err := tx.ExecContext(ctx, q, id); err != nil {
					return err
				}
			}
		}
		n = len(evs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: archive confirmed evidence: %w", err)
	}
	return n, nil
}

// archivable returns the seqs of up to limit evidence taken in before
// `before` (ms) whose every anchor is confirmed, oldest first. Intake order
// is time order, so the scan stops at the first evidence that is too young.
func archivable(ctx context.Context, tx *txn, before int64, limit int) ([]int64, error) {
	var (
		out   []int64
		after int64
	)
	for len(out) < limit {
		// Every anchor has its outbox row or span (none waits on its lane),
		// and each one's batch is confirmed.
		rows, err := tx.QueryContext(ctx, `SELECT e.seq, e.created_at, NOT EXISTS (SELECT 1 FROM `+anchorsOf+` a LEFT JOIN batches b ON b.id = a.batch_id
				WHERE a.batch_id IS NULL OR b.state <> ?)
				AND (SELECT COUNT(*) FROM `+anchorsOf+` a) = `+chainCount+`
			FROM evidence e WHERE e.seq > ? ORDER BY e.seq LIMIT ?`, BatchConfirmed, after, archiveScan)
		if err != nil {
			return nil, err
		}
		read, young := 0, false
		for rows.Next() {
			var (
				seq, at int64
				done    bool
			)
			if err := rows.Scan(&seq, &at, &done); err != nil {
				rows.Close()
				return nil, err
			}
			read, after = read+1, seq
			if at >= before {
				young = true
				break
			}
			if done && len(out) < limit {
				out = append(out, seq)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if young || read < archiveScan {
			break
		}
	}
	return out, nil
}

// unspan readies batch id for archiving `archived` of its evidence: when
// that is all of them its spans go (the batch goes with its last
// evidence); else they become the outbox rows they stand for, so the
// evidence it keeps keep their leaf indices once the others are gone.
func unspan(ctx context.Context, tx *txn, id int64, archived int) error {
	n, err := batchSize(ctx, tx, id)
	if err != nil {
		return err
	}
	if n > archived {
		return materializeSpans(ctx, tx, id)
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM batch_spans WHERE batch_id = ?`, id)
	return err
}

// keepLeaves stores a batch's leaf hashes in its row, once, before any of
// its evidence goes: batchTree builds the tree from them from then on.
func (s Maintenance) keepLeaves(ctx context.Context, tx *txn, id int64) error {
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM batches WHERE id = ? AND leaves IS NOT NULL`, id).Scan(&have); err != nil || have > 0 {
		return err
	}
	t, err := s.batchTree(ctx, tx, id)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE batches SET leaves = ? WHERE id = ?`, joinHashes(t.LeafHashes()), id)
	return err
}

// ArchivedIn returns the archive file holding an evidence's receipt, or
// ErrNotFound when the evidence was never archived.
func (s Maintenance) ArchivedIn(ctx context.Context, id string) (Archive, error) {
	var (
		a  Archive
		at int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT a.id, a.file, a.size, a.created_at FROM archived_evidence x JOIN archives a ON a.id = x.archive_id WHERE x.id = ?`, id).
		Scan(&a.ID, &a.File, &a.Size, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Archive{}, fmt.Errorf("evidence %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Archive{}, fmt.Errorf("store: archive of %s: %w", id, err)
	}
	a.CreatedAt = fromMS(at)
	return a, nil
}
