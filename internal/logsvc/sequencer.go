// Package logsvc runs keeper's evidence log (docs/log.md): the sequencer
// that appends accepted evidence and signs checkpoints, and the HTTP
// handler and exporter that serve the log as C2SP tlog-tiles.
package logsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// DefaultAppendMax bounds the evidence one append takes in, so a long
// backlog (the first start after an upgrade) is taken in by parts.
const DefaultAppendMax = 20_000

// LogAppender is the store as the sequencer needs it: the log's entries,
// taken in from accepted evidence, their hashes, its signed checkpoints,
// and the batches pinned to them (*store.Store).
type LogAppender interface {
	AppendLog(ctx context.Context, max int) (size uint64, root [32]byte, taken int, err error)
	LogSize(ctx context.Context) (uint64, error)
	LogHashReader(ctx context.Context) tlog.HashReader
	LatestCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	SaveCheckpoint(ctx context.Context, c store.LogCheckpoint, vkey string) error
	PinBatch(ctx context.Context, batchID int64, max int, vkey string, sign store.SignCheckpoint) (store.LogCheckpoint, error)
	PinnedCheckpoint(ctx context.Context, batchID int64) (store.LogCheckpoint, bool, error)
}

// Sequencer appends evidence to the log and signs a checkpoint whenever it
// grew, at least every Interval, and pins each batch to the checkpoint its
// anchor commits to (PinBatch). Every worker runs one over the shared
// store; appends are serialized by the store, and two signers with the one
// key sign a size identically (Ed25519 is deterministic).
type Sequencer struct {
	Store    LogAppender
	Signer   *evlog.Signer
	Interval time.Duration
	Logger   *slog.Logger
	// Anchored, when set, reads the checkpoints the chains hold for this
	// log (each chain's latest keeper anchor): the log refuses to sign
	// until its tree is consistent with every one of them (a store lost or
	// restored from an old backup would otherwise start a second history).
	Anchored func(ctx context.Context) ([]receipt.CheckpointRef, error)

	mu      sync.Mutex // one append and signature at a time in this process
	checked bool       // the chains' checkpoints were read and matched
	lastErr atomic.Pointer[error]

	signedMu sync.Mutex
	signedCh chan struct{} // closed when this process signs a checkpoint (Signed)
}

// Signed returns a channel closed the next time this sequencer signs a
// checkpoint: the witnesses are offered it at once (Witnessing.Wake).
func (q *Sequencer) Signed() <-chan struct{} {
	q.signedMu.Lock()
	defer q.signedMu.Unlock()
	if q.signedCh == nil {
		q.signedCh = make(chan struct{})
	}
	return q.signedCh
}

func (q *Sequencer) announceSigned() {
	q.signedMu.Lock()
	defer q.signedMu.Unlock()
	if q.signedCh != nil {
		close(q.signedCh)
		q.signedCh = nil
	}
}

// Err is why the last append or signature failed, nil when it succeeded:
// a worker whose log cannot sign is not ready (its batches cannot anchor).
func (q *Sequencer) Err() error {
	if p := q.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ErrInconsistent is returned when the log's tree does not extend a
// checkpoint the chains hold.
var ErrInconsistent = errors.New("the log is not consistent with a checkpoint anchored on chain")

// Run appends and signs every Interval until ctx ends.
func (q *Sequencer) Run(ctx context.Context) {
	t := time.NewTicker(q.Interval)
	defer t.Stop()
	for {
		q.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step is one round of Run: Sync, with its error kept for Err and logged
// when the log starts or stops failing.
func (q *Sequencer) Step(ctx context.Context) {
	_, err := q.Sync(ctx)
	if err != nil && ctx.Err() != nil {
		return
	}
	was := q.lastErr.Load() != nil
	if err != nil {
		q.lastErr.Store(&err)
	} else {
		q.lastErr.Store(nil)
	}
	switch {
	case err != nil && !was:
		q.Logger.Error("evidence log: cannot append or sign", "error", err)
	case err == nil && was:
		q.Logger.Info("evidence log: appending and signing again")
	}
}

// Sync takes every evidence waiting into the log, signs a checkpoint of the
// new size when it grew, and returns the latest checkpoint.
func (q *Sequencer) Sync(ctx context.Context) (store.LogCheckpoint, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.checkAnchored(ctx); err != nil {
		return store.LogCheckpoint{}, err
	}
	size, root, err := q.appendWaiting(ctx)
	if err != nil {
		return store.LogCheckpoint{}, err
	}
	latest, err := q.Store.LatestCheckpoint(ctx)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.LogCheckpoint{}, err
	}
	if size == 0 || (err == nil && latest.Size >= size) {
		return latest, nil
	}
	signed, err := q.sign(size, root)
	if err != nil {
		return store.LogCheckpoint{}, err
	}
	c := store.LogCheckpoint{Size: size, Root: root, Note: signed, CreatedAt: time.Now()}
	if err := q.Store.SaveCheckpoint(ctx, c, q.Signer.Key().Text); err != nil {
		return store.LogCheckpoint{}, err
	}
	q.announceSigned()
	return c, nil
}

// appendWaiting takes into the log what waits now, not what keeps
// arriving meanwhile: under a steady stream, chasing the tail would put off
// the checkpoint. It returns the log's size and root.
func (q *Sequencer) appendWaiting(ctx context.Context) (uint64, [32]byte, error) {
	for {
		n, r, taken, err := q.Store.AppendLog(ctx, DefaultAppendMax)
		if err != nil || taken < DefaultAppendMax {
			return n, r, err
		}
	}
}

// CheckpointFor returns a checkpoint holding at least need entries: the
// latest, after taking in whatever waits when the latest is smaller.
func (q *Sequencer) CheckpointFor(ctx context.Context, need uint64) (store.LogCheckpoint, error) {
	c, err := q.Store.LatestCheckpoint(ctx)
	if err == nil && c.Size >= need {
		return c, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	if c, err = q.Sync(ctx); err != nil {
		return c, err
	}
	if c.Size < need {
		return c, fmt.Errorf("evidence log: the latest checkpoint holds %d entries, the batch needs %d", c.Size, need)
	}
	return c, nil
}

// PinBatch returns the checkpoint a batch's anchor commits to, fixed by
// the batch's first call (store.Log.PinBatch). A batch pinned already gets
// its checkpoint back, with nothing written. Otherwise one store
// transaction takes in the evidence waiting up to the batch's last and
// pins the batch to the latest checkpoint when that holds them, or to one
// signed now; a backlog longer than one append is taken in by parts first,
// as Sync does. It fails with store.ErrBatchBeforeLog, store.ErrEmptyBatch
// or store.ErrBatchNotInLog, and with ErrInconsistent while the log does
// not extend the checkpoints the chains hold.
func (q *Sequencer) PinBatch(ctx context.Context, batchID int64) (store.LogCheckpoint, error) {
	// A pinned batch (every rebroadcast of one) is answered by one read,
	// without waiting behind this process's appends and signatures.
	if c, ok, err := q.Store.PinnedCheckpoint(ctx, batchID); ok || err != nil {
		return c, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	checked, drained := false, false
	for {
		signed := false
		c, err := q.Store.PinBatch(ctx, batchID, DefaultAppendMax, q.Signer.Key().Text, func(size uint64, root [32]byte) ([]byte, error) {
			signed = true
			return q.sign(size, root)
		})
		if err == nil && signed {
			q.announceSigned()
		}
		switch {
		case errors.Is(err, errUnchecked) && !checked:
			checked, err = true, q.checkAnchored(ctx)
		case errors.Is(err, store.ErrBatchNotInLog) && !drained:
			drained = true
			_, _, err = q.appendWaiting(ctx)
		default:
			return c, err
		}
		if err != nil {
			return store.LogCheckpoint{}, err
		}
	}
}

// errUnchecked is sign's refusal before the chains' checkpoints were read.
var errUnchecked = errors.New("evidence log: the checkpoints anchored on chain are not read yet")

// sign signs the checkpoint of the log's first size entries, whose root is
// root, once the log is known to extend what the chains hold
// (checkAnchored). Sync checks before it signs; PinBatch calls it inside
// its store transaction, where checking cannot read the store, so it
// refuses, and PinBatch checks and pins again. The caller holds mu.
func (q *Sequencer) sign(size uint64, root [32]byte) ([]byte, error) {
	if q.Anchored != nil && !q.checked {
		return nil, errUnchecked
	}
	return q.Signer.Sign(evlog.Checkpoint{Origin: q.Signer.Origin(), Size: size, Root: root})
}

// KeyHash is the hash of the log's key, which anchors name.
func (q *Sequencer) KeyHash() uint32 { return q.Signer.Key().Hash }

// checkAnchored reads the checkpoints the chains hold, once, and fails
// while the log is smaller than one of them or differs from it.
func (q *Sequencer) checkAnchored(ctx context.Context) error {
	if q.checked || q.Anchored == nil {
		return nil
	}
	refs, err := q.Anchored(ctx)
	if err != nil {
		return fmt.Errorf("evidence log: read the checkpoints anchored on chain: %w", err)
	}
	size, err := q.Store.LogSize(ctx)
	if err != nil {
		return err
	}
	key := q.Signer.Key().Hash
	for _, r := range refs {
		if r.KeyHash != key {
			continue
		}
		if r.Size > size {
			// The evidence behind it may still be waiting: take it in first.
			if size, _, err = q.appendWaiting(ctx); err != nil {
				return err
			}
			if size < r.Size {
				return fmt.Errorf("%w: a chain holds a checkpoint of %d entries and this store's log has %d: the store was lost or restored from an older backup; restore the newest one", ErrInconsistent, r.Size, size)
			}
		}
		h, err := tlog.TreeHash(int64(r.Size), q.Store.LogHashReader(ctx))
		if err != nil {
			return err
		}
		if h != r.Root {
			return fmt.Errorf("%w: the chain's checkpoint of %d entries has root %x, this store's log %x", ErrInconsistent, r.Size, r.Root, h)
		}
	}
	q.checked = true
	return nil
}
