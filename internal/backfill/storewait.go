package backfill

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/keeperhq/keeper/internal/store"
)

// defaultStoreRetry is the longest pause between two tries of a store
// that is down.
const defaultStoreRetry = 15 * time.Second

// patientStore is the store as a scan attempt uses it. A call the store
// cannot take because it is down (store.Unavailable: PostgreSQL restarting
// or cut off, SQLite's write lock held) is tried again after a second, then
// after twice as long each time up to wait, for as long as the attempt
// lives. An outage of keeper's own store is not the wallet's failure: it
// delays the scan, whose heartbeats go on meanwhile, and never costs the
// wallet an attempt or one of its retries (docs/backfill.md, "Outages").
// Every call it retries is one a lost answer makes safe to repeat: a chunk
// or a completion stored twice is stored once.
type patientStore struct {
	Scans
	wait time.Duration
	log  *slog.Logger
}

// do runs call until it succeeds, fails for another reason than the store
// being down, or ctx ends.
func (p *patientStore) do(ctx context.Context, call func() error) error {
	var down time.Time
	pause := min(time.Second, p.wait)
	for {
		err := call()
		if err == nil && !down.IsZero() {
			p.log.Info("the store is back: the backfill scan resumes", "waited", time.Since(down).Round(time.Millisecond))
		}
		if err == nil || !store.Unavailable(err) {
			return err
		}
		if down.IsZero() {
			down = time.Now()
			p.log.Warn("the store is unavailable: the backfill scan waits for it, without counting a failed attempt", "error", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w, while waiting for the store (%v)", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, p.wait)
	}
}

func (p *patientStore) BeginScan(ctx context.Context, wallet, network string) (row store.SyncStatus, err error) {
	err = p.do(ctx, func() (err error) {
		row, err = p.Scans.BeginScan(ctx, wallet, network)
		return err
	})
	return row, err
}

func (p *patientStore) SetScanTarget(ctx context.Context, wallet, network string, target uint64) error {
	return p.do(ctx, func() error { return p.Scans.SetScanTarget(ctx, wallet, network, target) })
}

func (p *patientStore) SaveChunk(ctx context.Context, wallet, network string, ch store.Chunk) error {
	return p.do(ctx, func() error { return p.Scans.SaveChunk(ctx, wallet, network, ch) })
}

func (p *patientStore) CompleteScan(ctx context.Context, wallet, network string, h store.Holdings) error {
	return p.do(ctx, func() error { return p.Scans.CompleteScan(ctx, wallet, network, h) })
}

func (p *patientStore) SyncStatus(ctx context.Context, wallet, network string) (row store.SyncStatus, err error) {
	err = p.do(ctx, func() (err error) {
		row, err = p.Scans.SyncStatus(ctx, wallet, network)
		return err
	})
	return row, err
}

func (p *patientStore) WalletAssets(ctx context.Context, wallet, network string) (assets []string, err error) {
	err = p.do(ctx, func() (err error) {
		assets, err = p.Scans.WalletAssets(ctx, wallet, network)
		return err
	})
	return assets, err
}
