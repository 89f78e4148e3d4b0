package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// Scans is the store as the backfill activities need it: each network's
// scan of a wallet, its checkpoints and chunks of transfers, and the
// wallet's balances once every network is scanned (*store.Store).
type Scans interface {
	BeginScan(ctx context.Context, wallet, network string) (store.SyncStatus, error)
	SetScanTarget(ctx context.Context, wallet, network string, target uint64) error
	SaveChunk(ctx context.Context, wallet, network string, ch store.Chunk) error
	CompleteScan(ctx context.Context, wallet, network string, h store.Holdings) error
	FailScan(ctx context.Context, wallet, network string, f store.ScanFailure) (store.SyncStatus, time.Duration, error)
	SyncStatus(ctx context.Context, wallet, network string) (store.SyncStatus, error)
	WalletAssets(ctx context.Context, wallet, network string) ([]string, error)
	FinishWallet(ctx context.Context, wallet string, finish func(store.FinishRows) store.FinishResults) ([]store.Balance, error)
}

// Activities are WalletSync's and Backfill's activities, with their
// dependencies.
type Activities struct {
	Store    Scans
	Scanners map[string]scan.Scanner // by network
	RPCURLs  []string                // endpoints to keep out of stored errors (they often carry API keys)
	Logger   *slog.Logger
	// StoreRetry is the longest pause between two tries of a store that
	// is down, while a scan waits for it (default 15 s).
	StoreRetry time.Duration
}

// byName are the activities by the names the workflows call them
// (workflows.*Activity): each method under its own name, the name
// registering the struct gave it before workflows called them by name, and
// that recorded histories hold.
func (a *Activities) byName() map[string]any {
	return map[string]any{
		workflows.ScanNetworkActivity:  a.ScanNetwork,
		workflows.FailScanActivity:     a.FailScan,
		workflows.FinishWalletActivity: a.FinishWallet,
	}
}

// ScanNetwork scans the item's history from its checkpoint to the finalized
// head fixed when the run began, storing each chunk's transfers together with
// the checkpoint after them, and heartbeating that checkpoint. At the end it
// reads the wallet's balances from the chain (before the start of the history
// and at its end) and marks the item COMPLETED. While keeper's own store is
// down it waits for it (patientStore): an outage of keeper's is no failure
// of the wallet's.
func (a *Activities) ScanNetwork(ctx context.Context, ref workflows.BackfillRef) (workflows.ScanResult, error) {
	res, err := a.scanItem(ctx, ref)
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		// Cancelled (worker stopping, heartbeat timeout): let Temporal run the
		// attempt again from the checkpoint.
		return workflows.ScanResult{}, err
	}
	msg := a.redact(err.Error())
	if retry.IsPermanent(err) {
		return workflows.ScanResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypePermanent, nil)
	}
	return workflows.ScanResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeScanFailed, nil)
}

func (a *Activities) scanItem(ctx context.Context, ref workflows.BackfillRef) (workflows.ScanResult, error) {
	sc, ok := a.Scanners[ref.Network]
	if !ok {
		return workflows.ScanResult{}, retry.Permanent(fmt.Errorf("network %q is not configured on this worker", ref.Network))
	}
	wallet, err := sc.ParseAddress(ref.Wallet)
	if err != nil {
		return workflows.ScanResult{}, err
	}
	log := worker.ActivityLogger(ctx, a.Logger, "wallet", wallet, "chain", ref.Network)
	last, resumed := lastCheckpoint(ctx)
	// Heartbeating from the start keeps the attempt alive while it waits
	// for the store, even before it has read its row.
	hb := newHeartbeater(ctx, last)
	defer hb.stop()
	st := &patientStore{Scans: a.Store, wait: cmp.Or(a.StoreRetry, defaultStoreRetry), log: log}
	row, err := st.BeginScan(ctx, wallet, ref.Network)
	if errors.Is(err, store.ErrNotFound) {
		return workflows.ScanResult{}, retry.Permanent(err)
	}
	if err != nil {
		return workflows.ScanResult{}, err
	}
	if resumed {
		log.Info("backfill resumes after an interrupted attempt", "heartbeat_checkpoint", last.Block, "stored_checkpoint", row.Checkpoint)
	}
	if row.Target == 0 {
		if row.Target, err = sc.Finalized(ctx); err != nil {
			return workflows.ScanResult{}, err
		}
		if err := st.SetScanTarget(ctx, wallet, ref.Network, row.Target); err != nil {
			return workflows.ScanResult{}, err
		}
	}
	job := scan.Job{Wallet: wallet, Start: row.Start, Target: row.Target, From: scan.Cursor{Block: row.Checkpoint, Sig: row.Cursor}, Scanned: row.Scanned}
	hb.beat(job.From)
	h, err := a.scanToTheEnd(ctx, sc, st, hb, &job)
	if err != nil {
		return workflows.ScanResult{}, err
	}
	if err := st.CompleteScan(ctx, wallet, ref.Network, h); err != nil {
		return workflows.ScanResult{}, err
	}
	done, err := st.SyncStatus(ctx, wallet, ref.Network)
	if err != nil {
		return workflows.ScanResult{}, err
	}
	return workflows.ScanResult{Target: job.Target, Scanned: done.Scanned, Transfers: done.Transfers}, nil
}

// lastCheckpoint is the checkpoint an interrupted attempt heartbeated, if
// this attempt follows one.
func lastCheckpoint(ctx context.Context) (scan.Cursor, bool) {
	var hb scan.Cursor
	if !activity.HasHeartbeatDetails(ctx) || activity.GetHeartbeatDetails(ctx, &hb) != nil {
		return scan.Cursor{}, false
	}
	return hb, true
}

// scanToTheEnd scans the job, storing each chunk, then reads the wallet's
// balances. A node keeps the state of recent blocks only: if the end of
// the scan fell out of it while scanning, it scans on to a newer head and
// reads there. A node that has not even the state of its newest finalized
// block cannot say what the wallet holds: a permanent error, which names
// the archive setting that would answer.
func (a *Activities) scanToTheEnd(ctx context.Context, sc scan.Scanner, st *patientStore, hb *heartbeater, job *scan.Job) (store.Holdings, error) {
	emit := func(ch scan.Chunk) error {
		if err := st.SaveChunk(ctx, job.Wallet, sc.Network(), chunkRecord(ch)); err != nil {
			return err
		}
		job.From, job.Scanned = ch.Cursor, ch.Scanned
		hb.beat(ch.Cursor)
		return nil
	}
	for round := 0; ; round++ {
		if err := sc.Scan(ctx, *job, emit); err != nil {
			return store.Holdings{}, err
		}
		h, pruned, err := a.holdings(ctx, sc, st, job.Wallet, *job)
		if err != nil || pruned == nil {
			return h, err
		}
		head, err := sc.Finalized(ctx)
		if err != nil {
			return store.Holdings{}, err
		}
		if round == 2 || head <= job.Target {
			setting := cmp.Or(scan.ArchiveSetting(sc.Network()), "an archive endpoint")
			return store.Holdings{}, retry.Permanent(fmt.Errorf("%s: the wallet's balances at block %d, the end of the scan: the node has %s, "+
				"and its finalized head is at block %d: use a node that keeps its finalized blocks' state, or set %s to an archive endpoint",
				sc.Network(), job.Target, pruned.Detail, head, setting))
		}
		job.Target = head
		if err := st.SetScanTarget(ctx, job.Wallet, sc.Network(), head); err != nil {
			return store.Holdings{}, err
		}
	}
}

// holdings reads what the chain says the wallet held of every asset it has
// transfers of: before the first block (or slot) of its history, and at the
// end of the scan. It returns the first holding at the end of the scan whose
// state the node no longer had, if any.
func (a *Activities) holdings(ctx context.Context, sc scan.Scanner, st *patientStore, wallet string, job scan.Job) (store.Holdings, *scan.Holding, error) {
	assets, err := st.WalletAssets(ctx, wallet, sc.Network())
	if err != nil {
		return store.Holdings{}, nil, err
	}
	h := store.Holdings{OpeningAt: max(job.Start, 1) - 1, ClosingAt: job.Target}
	opening, err := sc.Holdings(ctx, wallet, h.OpeningAt, assets)
	if err != nil {
		return store.Holdings{}, nil, err
	}
	closing, err := sc.Holdings(ctx, wallet, h.ClosingAt, assets)
	if err != nil {
		return store.Holdings{}, nil, err
	}
	h.Opening, h.Closing = holdingRecords(opening), holdingRecords(closing)
	for i := range closing {
		if closing[i].Pruned {
			return h, &closing[i], nil
		}
	}
	return h, nil, nil
}

// heartbeater heartbeats the latest checkpoint after every chunk and, in
// between, often enough that a slow chunk is not taken for a dead worker.
type heartbeater struct {
	ctx  context.Context
	mu   sync.Mutex
	cur  scan.Cursor
	done chan struct{}
	wg   sync.WaitGroup
}

func newHeartbeater(ctx context.Context, cur scan.Cursor) *heartbeater {
	h := &heartbeater{ctx: ctx, cur: cur, done: make(chan struct{})}
	every := cmp.Or(activity.GetInfo(ctx).HeartbeatTimeout/4, 10*time.Second)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(max(every, 50*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				h.mu.Lock()
				cur := h.cur
				h.mu.Unlock()
				activity.RecordHeartbeat(ctx, cur)
			}
		}
	}()
	return h
}

func (h *heartbeater) beat(cur scan.Cursor) {
	h.mu.Lock()
	h.cur = cur
	h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, cur)
}

func (h *heartbeater) stop() {
	close(h.done)
	h.wg.Wait()
}

// FailScan records a failed attempt (a local activity: quick, and it must
// not wait for a slot behind long scans). It computes the backfill schedule's
// jittered delay for the retry (docs/retries.md, backfill), so the workflow
// only sleeps for what it is told.
func (a *Activities) FailScan(ctx context.Context, in workflows.FailInput) (workflows.FailOutcome, error) {
	row, wait, err := a.Store.FailScan(ctx, in.Ref.Wallet, in.Ref.Network, store.ScanFailure{
		Error: in.Error, Permanent: in.Permanent, Now: in.Now, MaxRetries: in.Schedule.MaxRetries, Delay: in.Schedule.Schedule().Next,
	})
	if errors.Is(err, store.ErrNotFound) {
		return workflows.FailOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypePermanent, err)
	}
	if err != nil {
		return workflows.FailOutcome{}, err
	}
	worker.ActivityLogger(ctx, a.Logger, "wallet", in.Ref.Wallet, "chain", in.Ref.Network).Warn("backfill attempt failed", "status", row.Status,
		"retry", row.RetryCount, "next_retry_in", wait, "error", in.Error)
	return workflows.FailOutcome{Status: backfillOutcome(row.Status), RetryCount: row.RetryCount, Wait: wait, NextRetryAt: row.NextRetryAt}, nil
}

// backfillOutcome is the outcome for an item's stored state.
func backfillOutcome(s store.SyncState) string {
	switch s {
	case store.SyncCompleted:
		return workflows.BackfillCompleted
	case store.SyncFailed:
		return workflows.BackfillFailed
	case store.SyncAbandoned:
		return workflows.BackfillAbandoned
	}
	return string(s)
}

// FinishWallet reclassifies a wallet's transfers and recalculates and
// reconciles its balances, on the networks that are done, once none is
// PENDING or RUNNING (docs/backfill.md, "Finish"); while one is, it finishes
// nothing and answers Busy.
func (a *Activities) FinishWallet(ctx context.Context, wallet string) (workflows.WalletSummary, error) {
	bals, err := a.Store.FinishWallet(ctx, wallet, FinishRules)
	if errors.Is(err, store.ErrWalletBusy) {
		return workflows.WalletSummary{Busy: true}, nil
	}
	if err != nil {
		return workflows.WalletSummary{}, err
	}
	out := workflows.WalletSummary{Assets: len(bals)}
	for _, b := range bals {
		switch {
		case b.Stale:
			out.Stale++
		case b.Reconciled == nil:
			out.Unchecked++
		case *b.Reconciled:
			out.Reconciled++
		default:
			out.Unreconciled++
		}
	}
	return out, nil
}

// FinishRules are backfill's rules for finishing a wallet over the store's
// rows (store.FinishWallet runs them in its transaction): scan.Classify
// classifies the transfers and scan.Reconcile recalculates and
// reconciles the balances.
func FinishRules(rows store.FinishRows) store.FinishResults {
	moves := make([]scan.Move, len(rows.Transfers))
	for i, t := range rows.Transfers {
		moves[i] = scan.Move{Network: t.Network, Transfer: transferOf(t.TransferRecord)}
	}
	var out store.FinishResults
	for _, c := range scan.Classify(moves) {
		out.Classes = append(out.Classes, store.TxClass{Network: c.Network, Tx: c.Tx, Class: c.Class})
	}
	bals := make([]scan.Balance, len(rows.Balances))
	for i, b := range rows.Balances {
		bals[i] = scan.Balance{Network: b.Network, OpeningAt: b.OpeningAt,
			Opening: scan.Holding{Asset: b.Asset, Amount: b.Opening, Known: b.OpeningKnown},
			Closing: scan.Holding{Asset: b.Asset, Amount: b.Chain, Known: b.Chain != nil}, ClosingAt: b.ChainAt,
			Completed: rows.Status[b.Network] == store.SyncCompleted}
	}
	for i, r := range scan.Reconcile(moves, bals) {
		b := rows.Balances[i]
		b.Opening, b.Computed, b.Reconciled, b.Detail = r.Opening, r.Computed, r.Reconciled, r.Detail
		out.Balances = append(out.Balances, b)
	}
	return out
}

// chunkRecord is what the store keeps of a scanner's chunk.
func chunkRecord(ch scan.Chunk) store.Chunk {
	out := store.Chunk{Transfers: make([]store.TransferRecord, len(ch.Transfers)), Checkpoint: ch.Cursor.Block, Cursor: ch.Cursor.Sig,
		Scanned: ch.Scanned, Total: ch.Total}
	for i, t := range ch.Transfers {
		out.Transfers[i] = store.TransferRecord{Tx: t.Tx, Kind: string(t.Kind), Index: t.Index, Asset: t.Asset, From: t.From, To: t.To,
			Amount: t.Amount, Direction: string(t.Direction), Block: t.Block, BlockTime: t.BlockTime}
	}
	return out
}

// transferOf is a stored transfer in backfill's terms.
func transferOf(r store.TransferRecord) scan.Transfer {
	return scan.Transfer{Tx: r.Tx, Kind: scan.Kind(r.Kind), Index: r.Index, Asset: r.Asset, From: r.From, To: r.To,
		Amount: r.Amount, Direction: scan.Direction(r.Direction), Block: r.Block, BlockTime: r.BlockTime}
}

// holdingRecords are what the store keeps of the chain's holdings.
func holdingRecords(hs []scan.Holding) []store.Holding {
	if hs == nil {
		return nil
	}
	out := make([]store.Holding, len(hs))
	for i, h := range hs {
		out[i] = store.Holding{Asset: h.Asset, Amount: h.Amount, Known: h.Known}
	}
	return out
}

// redact replaces the configured endpoints in msg by their scheme and host.
func (a *Activities) redact(msg string) string {
	for _, raw := range a.RPCURLs {
		if short := redact.Endpoint(raw); short != raw {
			msg = strings.ReplaceAll(msg, raw, short)
		}
	}
	return msg
}
