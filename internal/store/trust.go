package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/evlog/trust"
)

// The deployment's trust root (migration 13, docs/log.md, Trust): the log's
// key and the accounts that anchor it, per network, with the sizes each one
// covers. Every version is kept in trust_roots, the root as JSON beside the
// note the log's key signed; a version is written only when it extends the
// one before (trust.Extends), so the root is only ever appended to.

// TrustRoot is one version of the deployment's trust root.
type TrustRoot struct {
	Version   int64
	Root      trust.Root
	Note      []byte // the root signed by the log's key (trust.Sign), as /log/trust serves it
	CreatedAt time.Time
}

// TrustRoot is the latest version of the deployment's trust root, or
// ErrNotFound before the first.
func (s Log) TrustRoot(ctx context.Context) (TrustRoot, error) {
	return s.latestTrustRoot(ctx, s.r)
}

func (s Log) latestTrustRoot(ctx context.Context, q querier) (TrustRoot, error) {
	var (
		t          TrustRoot
		root, note string
		created    int64
	)
	err := q.QueryRowContext(ctx, `SELECT version, root, note, created_at FROM trust_roots ORDER BY version DESC LIMIT 1`).
		Scan(&t.Version, &root, &note, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("store: trust root: %w", ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("store: trust root: %w", err)
	}
	if t.Root, err = trust.Parse([]byte(root)); err != nil {
		return t, fmt.Errorf("store: trust root version %d: %w", t.Version, err)
	}
	t.Note, t.CreatedAt = []byte(note), fromMS(created)
	return t, nil
}

// UpdateTrustRoot changes the trust root, one writer at a time: next gets
// the latest root (ok false before the first) and returns the root that
// follows it and that root signed as a note, or the same root when nothing
// changed. A root that does not extend the latest is refused. It returns
// the latest version after the update.
func (s Log) UpdateTrustRoot(ctx context.Context, next func(prev trust.Root, ok bool) (trust.Root, []byte, error)) (TrustRoot, error) {
	var out TrustRoot
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "trust root"); err != nil {
			return err
		}
		prev, err := s.latestTrustRoot(ctx, tx)
		have := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		root, note, err := next(prev.Root, have)
		if err != nil {
			return err
		}
		if have && bytes.Equal(root.Marshal(), prev.Root.Marshal()) {
			out = prev
			return nil
		}
		key, err := root.Key()
		if err != nil {
			return err
		}
		if signed, err := trust.Open(note, &key); err != nil || !bytes.Equal(signed.Marshal(), root.Marshal()) {
			return fmt.Errorf("the note is not this root signed by its log key (%v)", err)
		}
		if have {
			if err := trust.Extends(prev.Root, root); err != nil {
				return err
			}
		}
		out = TrustRoot{Version: prev.Version + 1, Root: root, Note: note, CreatedAt: time.Now()}
		_, err = tx.ExecContext(ctx, `INSERT INTO trust_roots (version, root, note, created_at) VALUES (?, ?, ?, ?)`,
			out.Version, string(root.Marshal()), string(note), ms(out.CreatedAt))
		return err
	})
	if err != nil {
		return TrustRoot{}, fmt.Errorf("store: update the trust root: %w", err)
	}
	return out, nil
}
