package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LedgerIntent is one settlement intent held by the built-in ledger.
type LedgerIntent struct {
	ID             string
	IdempotencyKey string
	Epoch          string
	Account        string
	Amount         string
	Replays        int // times the same key came again with the same body
	CreatedAt      time.Time
}

// bodyHash is what "the same body" means: the intent's fields, not its bytes
// (whitespace or key order do not make a different request).
func (li LedgerIntent) bodyHash() []byte {
	h := sha256.Sum256([]byte(li.Epoch + "\x00" + li.Account + "\x00" + li.Amount))
	return h[:]
}

// RecordIntent stores an intent under its idempotency key. The same key
// again with the same body returns the stored intent with replay=true and
// stores nothing new; with a different body it returns ErrConflict.
func (s Epochs) RecordIntent(ctx context.Context, li LedgerIntent) (LedgerIntent, bool, error) {
	res, err := s.RecordLedgerIntents(ctx, []LedgerIntent{li})
	if err != nil {
		return LedgerIntent{}, false, err
	}
	return res[0].Intent, res[0].Replay, res[0].Err
}

// IntentResult is what RecordLedgerIntents did with one intent: stored it, found
// it already held (Replay), or refused it (Err wraps ErrConflict) because
// its key holds another body; Intent is then the stored one.
type IntentResult struct {
	Intent LedgerIntent
	Replay bool
	Err    error
}

// RecordLedgerIntents records several intents in one transaction, each as
// RecordIntent would: the built-in ledger gathers concurrent requests into
// one commit.
func (s Epochs) RecordLedgerIntents(ctx context.Context, lis []LedgerIntent) ([]IntentResult, error) {
	now := time.Now()
	out := make([]IntentResult, len(lis))
	err := s.tx(ctx, func(tx *txn) error {
		insert, err := tx.PrepareContext(ctx, `INSERT INTO ledger_intents (idempotency_key, id, body_hash, epoch, account, amount, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`)
		if err != nil {
			return err
		}
		defer insert.Close()
		for i, li := range lis {
			li.ID, li.CreatedAt, li.Replays = newID("in_"), fromMS(ms(now)), 0
			hash := li.bodyHash()
			res, err := insert.ExecContext(ctx, li.IdempotencyKey, li.ID, hash, li.Epoch, li.Account, li.Amount, ms(now))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				out[i] = IntentResult{Intent: li}
				continue
			}
			stored, prevHash, err := ledgerIntent(ctx, tx, li.IdempotencyKey)
			if err != nil {
				return err
			}
			if string(prevHash) != string(hash) {
				out[i] = IntentResult{Intent: stored, Err: fmt.Errorf("idempotency key %s was first used for %s %s in epoch %s: %w",
					li.IdempotencyKey, stored.Account, stored.Amount, stored.Epoch, ErrConflict)}
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE ledger_intents SET replays = replays + 1 WHERE idempotency_key = ?`, li.IdempotencyKey); err != nil {
				return err
			}
			stored.Replays++
			out[i] = IntentResult{Intent: stored, Replay: true}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: record intents: %w", err)
	}
	return out, nil
}

const ledgerCols = `id, idempotency_key, epoch, account, amount, replays, created_at, body_hash`

func ledgerIntent(ctx context.Context, q querier, key string) (LedgerIntent, []byte, error) {
	return scanLedgerIntent(q.QueryRowContext(ctx, `SELECT `+ledgerCols+` FROM ledger_intents WHERE idempotency_key = ?`, key))
}

func scanLedgerIntent(row interface{ Scan(...any) error }) (LedgerIntent, []byte, error) {
	var (
		li      LedgerIntent
		created int64
		hash    []byte
	)
	err := row.Scan(&li.ID, &li.IdempotencyKey, &li.Epoch, &li.Account, &li.Amount, &li.Replays, &created, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return LedgerIntent{}, nil, ErrNotFound
	}
	li.CreatedAt = fromMS(created)
	return li, hash, err
}

// LedgerIntent returns the intent stored under an idempotency key, or ErrNotFound.
func (s Epochs) LedgerIntent(ctx context.Context, key string) (LedgerIntent, error) {
	li, _, err := ledgerIntent(ctx, s.r, key)
	return li, err
}

// LedgerIntents returns up to limit intents of an epoch in account order,
// starting after the account afterAccount ("" for the first page).
func (s Epochs) LedgerIntents(ctx context.Context, epoch, afterAccount string, limit int) ([]LedgerIntent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+ledgerCols+` FROM ledger_intents WHERE epoch = ? AND account > ? ORDER BY account LIMIT ?`, epoch, afterAccount, limit)
	if err != nil {
		return nil, fmt.Errorf("store: ledger intents of %s: %w", epoch, err)
	}
	defer rows.Close()
	var out []LedgerIntent
	for rows.Next() {
		li, _, err := scanLedgerIntent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, li)
	}
	return out, rows.Err()
}
