package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"time"
)

// Wallets owns wallet backfill (docs/backfill.md): one sync-status row per
// (wallet, network) (sync_status), the transfers found (transfers) and the
// balances computed and read from the chain (wallet_balances).
type Wallets struct{ *db }

// SyncState is where the backfill of one (wallet, network) stands (docs/backfill.md).
type SyncState string

// The backfill lifecycle. FAILED with a next retry time waits for that
// retry; FAILED without one failed for good (a permanent error). ABANDONED
// used up its retries. Re-adding the wallet starts FAILED, ABANDONED and
// COMPLETED items again; PENDING and RUNNING ones are already at work.
const (
	SyncPending   SyncState = "PENDING"
	SyncRunning   SyncState = "RUNNING"
	SyncCompleted SyncState = "COMPLETED"
	SyncFailed    SyncState = "FAILED"
	SyncAbandoned SyncState = "ABANDONED"
)

// Active reports whether the item is queued or being scanned.
func (s SyncState) Active() bool { return s == SyncPending || s == SyncRunning }

// ErrWalletBusy is FinishWallet's answer while one of the wallet's items is
// PENDING or RUNNING: nothing was finished.
var ErrWalletBusy = errors.New("a network of the wallet is pending or running")

// SyncStatus is one (wallet, network) backfill: its progress, checkpoint
// and retries.
type SyncStatus struct {
	Wallet      string
	Network     string
	Status      SyncState
	Start       uint64 // first block (or slot) of the history looked at
	Target      uint64 // last one: the finalized head when the run began (0: not fixed yet)
	Checkpoint  uint64 // EVM: the next block to scan; Solana: the slot of Cursor
	Cursor      string // Solana: the newest signature stored
	Scanned     uint64 // blocks or signatures scanned
	Total       uint64 // of this many (0: not known yet)
	Transfers   int    // rows stored for this network (fees included)
	Attempts    int    // scan attempts started
	RetryCount  int
	NextRetryAt time.Time // zero: no retry scheduled
	LastError   string
	Gen         int64 // bumped by every (re-)add that starts work
	CreatedAt   time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	UpdatedAt   time.Time
	startedGen  int64
}

// Waiting reports whether the item failed and waits for its next retry.
func (st SyncStatus) Waiting() bool { return st.Status == SyncFailed && !st.NextRetryAt.IsZero() }

// Done reports whether the item's work is over for now: COMPLETED,
// ABANDONED, or FAILED for good. Only a done network's balances are
// recalculated (docs/backfill.md, "Finish").
func (st SyncStatus) Done() bool { return !st.Status.Active() && !st.Waiting() }

// NetworkStart names a network to backfill and where its history starts.
type NetworkStart struct {
	Network string
	Start   uint64
}

const syncCols = `s.wallet, s.network, s.status, s.start_point, s.target, s.checkpoint, s.cursor, s.scanned, s.total,
	(SELECT COUNT(*) FROM transfers t WHERE t.wallet = s.wallet AND t.network = s.network),
	s.attempts, s.retry_count, s.next_retry_at, s.last_error, s.start_seq, s.started_seq,
	s.created_at, s.started_at, s.finished_at, s.updated_at`

func scanSync(row interface{ Scan(...any) error }) (SyncStatus, error) {
	var (
		st                                       SyncStatus
		status                                   string
		next, created, started, finished, update int64
	)
	err := row.Scan(&st.Wallet, &st.Network, &status, &st.Start, &st.Target, &st.Checkpoint, &st.Cursor, &st.Scanned, &st.Total,
		&st.Transfers, &st.Attempts, &st.RetryCount, &next, &st.LastError, &st.Gen, &st.startedGen,
		&created, &started, &finished, &update)
	if errors.Is(err, sql.ErrNoRows) {
		return SyncStatus{}, ErrNotFound
	}
	if err != nil {
		return SyncStatus{}, err
	}
	st.Status = SyncState(status)
	st.NextRetryAt, st.CreatedAt, st.StartedAt, st.FinishedAt, st.UpdatedAt = fromMS(next), fromMS(created), fromMS(started), fromMS(finished), fromMS(update)
	return st, nil
}

func syncRows(ctx context.Context, q querier, where string, args ...any) ([]SyncStatus, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+syncCols+` FROM sync_status s WHERE `+where+` ORDER BY s.wallet, s.network`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SyncStatus
	for rows.Next() {
		st, err := scanSync(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

func syncRow(ctx context.Context, q querier, wallet, network string) (SyncStatus, error) {
	return scanSync(q.QueryRowContext(ctx, `SELECT `+syncCols+` FROM sync_status s WHERE s.wallet = ? AND s.network = ?`, wallet, network))
}

// AddWallet records a wallet's backfill for each network, in one
// transaction: a new (wallet, network) is stored PENDING; one that is
// PENDING or RUNNING is left alone; a FAILED, ABANDONED or COMPLETED one is
// made PENDING again with its retry count and next retry time reset (its
// checkpoint is kept, so the scan continues where it stopped). It returns the
// wallet's rows and whether any work was (re)started.
func (s Wallets) AddWallet(ctx context.Context, wallet string, networks []NetworkStart) ([]SyncStatus, bool, error) {
	changed := false
	var out []SyncStatus
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "wallet "+wallet); err != nil {
			return err
		}
		now := ms(time.Now())
		for _, n := range networks {
			cur, err := syncRow(ctx, tx, wallet, n.Network)
			switch {
			case errors.Is(err, ErrNotFound):
				if _, err := tx.ExecContext(ctx, `INSERT INTO sync_status (wallet, network, status, start_point, checkpoint, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, wallet, n.Network, SyncPending, n.Start, n.Start, now, now); err != nil {
					return err
				}
				changed = true
			case err != nil:
				return err
			case !cur.Status.Active():
				if _, err := tx.ExecContext(ctx, `UPDATE sync_status SET status = ?, retry_count = 0, next_retry_at = 0, last_error = '',
					target = 0, start_seq = start_seq + 1, finished_at = 0, updated_at = ? WHERE wallet = ? AND network = ?`,
					SyncPending, now, wallet, n.Network); err != nil {
					return err
				}
				// Its balances stay readable, stale until the network is
				// finished again (docs/backfill.md, "Finish").
				if err := markStale(ctx, tx, wallet, n.Network, now); err != nil {
					return err
				}
				changed = true
			}
		}
		var err error
		out, err = syncRows(ctx, tx, `s.wallet = ?`, wallet)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: add wallet %s: %w", wallet, err)
	}
	if changed {
		s.notify()
	}
	return out, changed, nil
}

// WalletStatus returns a wallet's sync-status rows, or ErrNotFound.
func (s Wallets) WalletStatus(ctx context.Context, wallet string) ([]SyncStatus, error) {
	out, err := syncRows(ctx, s.r, `s.wallet = ?`, wallet)
	if err != nil {
		return nil, fmt.Errorf("store: wallet %s: %w", wallet, err)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out, nil
}

// SyncStatus returns one (wallet, network) row, or ErrNotFound.
func (s Wallets) SyncStatus(ctx context.Context, wallet, network string) (SyncStatus, error) {
	return syncRow(ctx, s.r, wallet, network)
}

// WalletStart is (re-)added work whose WalletSync must still be started or
// signalled: the networks and the generation of each.
type WalletStart struct {
	Wallet   string
	Networks []NetworkGen
}

// NetworkGen is a network's add generation.
type NetworkGen struct {
	Network string
	Gen     int64
}

// UnstartedWallets lists the wallets with (re-)added work not yet handed to
// Temporal, at most limit of them.
func (s Wallets) UnstartedWallets(ctx context.Context, limit int) ([]WalletStart, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT wallet, network, start_seq FROM sync_status
		WHERE wallet IN (SELECT DISTINCT wallet FROM sync_status WHERE started_seq < start_seq ORDER BY wallet LIMIT ?)
		AND started_seq < start_seq ORDER BY wallet, network`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: unstarted wallets: %w", err)
	}
	defer rows.Close()
	var out []WalletStart
	for rows.Next() {
		var w string
		var n NetworkGen
		if err := rows.Scan(&w, &n.Network, &n.Gen); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Wallet != w {
			out = append(out, WalletStart{Wallet: w})
		}
		out[len(out)-1].Networks = append(out[len(out)-1].Networks, n)
	}
	return out, rows.Err()
}

// MarkWalletStarted records that Temporal has the work of ws. A re-add that
// happened meanwhile has a newer generation and stays unstarted.
func (s Wallets) MarkWalletStarted(ctx context.Context, ws WalletStart) error {
	return s.tx(ctx, func(tx *txn) error {
		for _, n := range ws.Networks {
			if _, err := tx.ExecContext(ctx, `UPDATE sync_status SET started_seq = `+s.d.greatest+`(started_seq, ?) WHERE wallet = ? AND network = ?`,
				n.Gen, ws.Wallet, n.Network); err != nil {
				return err
			}
		}
		return nil
	})
}

// Handed reports whether Temporal was handed the item's latest add (or
// requeue): the backfill dispatcher has signalled its WalletSync.
func (st SyncStatus) Handed() bool { return st.startedGen >= st.Gen }

// Due reports whether the item should have a live workflow at now: PENDING
// or RUNNING, or FAILED and past its next retry time (docs/backfill.md,
// "Outages").
func (st SyncStatus) Due(now time.Time) bool {
	return st.Status.Active() || (st.Waiting() && !st.NextRetryAt.After(now))
}

// ItemKey names one (wallet, network) item; it pages DueItems.
type ItemKey struct {
	Wallet  string
	Network string
}

// DueItems lists, in (wallet, network) order after the key after, at most
// limit items already handed to Temporal that are due (SyncStatus.Due), or
// COMPLETED with balances still stale (the wallet was never finished), and
// unchanged since quiet: those a workflow should be working on, for the
// reconciliation to check (docs/backfill.md, "Outages"). A scan that makes
// progress updates its row, so it is rarely among them.
func (s Wallets) DueItems(ctx context.Context, now, quiet time.Time, after ItemKey, limit int) ([]SyncStatus, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+syncCols+` FROM sync_status s
		WHERE (s.wallet > ? OR (s.wallet = ? AND s.network > ?)) AND s.started_seq >= s.start_seq AND s.updated_at <= ?
		AND (s.status IN (?, ?) OR (s.status = ? AND s.next_retry_at > 0 AND s.next_retry_at <= ?)
			OR (s.status = ? AND EXISTS (SELECT 1 FROM wallet_balances b WHERE b.wallet = s.wallet AND b.network = s.network AND b.stale)))
		ORDER BY s.wallet, s.network LIMIT ?`,
		after.Wallet, after.Wallet, after.Network, ms(quiet), SyncPending, SyncRunning, SyncFailed, ms(now), SyncCompleted, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due backfill items: %w", err)
	}
	defer rows.Close()
	var out []SyncStatus
	for rows.Next() {
		st, err := scanSync(rows)
		if err != nil {
			return nil, fmt.Errorf("store: due backfill items: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Requeue queues an item that has no live workflow again (docs/backfill.md,
// "Outages"): PENDING, with a new generation that the dispatcher hands to
// Temporal (UnstartedWallets), keeping its checkpoint, attempts, retry count
// and last error. It changes nothing, and answers false, when the row has
// changed since seen was read (the item moved on, or another node requeued
// it first).
func (s Wallets) Requeue(ctx context.Context, seen SyncStatus) (bool, error) {
	var ok bool
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "wallet "+seen.Wallet); err != nil {
			return err
		}
		now := ms(time.Now())
		res, err := tx.ExecContext(ctx, `UPDATE sync_status SET status = ?, next_retry_at = 0, finished_at = 0, start_seq = start_seq + 1, updated_at = ?
			WHERE wallet = ? AND network = ? AND status = ? AND start_seq = ? AND started_seq >= start_seq AND updated_at = ?`,
			SyncPending, now, seen.Wallet, seen.Network, seen.Status, seen.Gen, ms(seen.UpdatedAt))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		ok = true
		return markStale(ctx, tx, seen.Wallet, seen.Network, now)
	})
	if err != nil {
		return false, fmt.Errorf("store: requeue %s on %s: %w", seen.Wallet, seen.Network, err)
	}
	if ok {
		s.notify()
	}
	return ok, nil
}

// BeginScan marks an item RUNNING for a new scan attempt and returns it.
func (s Wallets) BeginScan(ctx context.Context, wallet, network string) (SyncStatus, error) {
	var out SyncStatus
	err := s.tx(ctx, func(tx *txn) error {
		now := ms(time.Now())
		res, err := tx.ExecContext(ctx, `UPDATE sync_status SET status = ?, attempts = attempts + 1, next_retry_at = 0,
			started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END, updated_at = ? WHERE wallet = ? AND network = ?`,
			SyncRunning, now, now, wallet, network)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		out, err = syncRow(ctx, tx, wallet, network)
		return err
	})
	if err != nil {
		return SyncStatus{}, fmt.Errorf("store: begin scan of %s on %s: %w", wallet, network, err)
	}
	return out, nil
}

// SetScanTarget fixes the last block (or slot) of the run.
func (s Wallets) SetScanTarget(ctx context.Context, wallet, network string, target uint64) error {
	_, err := s.w.ExecContext(ctx, `UPDATE sync_status SET target = ?, updated_at = ? WHERE wallet = ? AND network = ?`,
		target, ms(time.Now()), wallet, network)
	return err
}

// NativeAsset names a network's coin among a wallet's assets; tokens are
// named by their contract address. It is the scanners' name for it
// (scan.NativeAsset).
const NativeAsset = "native"

// TransferRecord is one movement of value to or from a wallet, as stored.
// (Tx, Kind, Index) is unique per wallet and network.
type TransferRecord struct {
	Tx        string
	Kind      string // what moved: native, token or fee
	Index     int
	Asset     string // NativeAsset or a token's address
	From, To  string
	Amount    *big.Int
	Direction string // seen from the wallet: in, out or self
	Block     uint64 // block number or slot
	BlockTime time.Time
}

// Chunk is a stretch of a scan to store: its transfers and the checkpoint
// after them.
type Chunk struct {
	Transfers  []TransferRecord
	Checkpoint uint64 // EVM: the next block to scan; Solana: the slot of Cursor
	Cursor     string // Solana: the newest signature stored
	Scanned    uint64 // units scanned so far
	Total      uint64 // units the scan will have covered when done (0: not known yet)
}

// SaveChunk stores a chunk's transfers and moves the checkpoint past them,
// in one transaction. Transfers already stored (a repeated chunk) are
// skipped; the checkpoint only moves forward, so a late write from an
// attempt presumed dead cannot take it back.
func (s Wallets) SaveChunk(ctx context.Context, wallet, network string, ch Chunk) error {
	ts := append([]TransferRecord(nil), ch.Transfers...)
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Block != ts[j].Block {
			return ts[i].Block < ts[j].Block
		}
		if ts[i].Tx != ts[j].Tx {
			return ts[i].Tx < ts[j].Tx
		}
		if ts[i].Kind != ts[j].Kind {
			return ts[i].Kind < ts[j].Kind
		}
		return ts[i].Index < ts[j].Index
	})
	err := s.tx(ctx, func(tx *txn) error {
		if len(ts) > 0 {
			stmt, err := tx.PrepareContext(ctx, `INSERT INTO transfers (network, wallet, tx, kind, idx, asset, sender, recipient, amount, direction, block, block_time)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (network, wallet, tx, kind, idx) DO NOTHING`)
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, t := range ts {
				if _, err := stmt.ExecContext(ctx, network, wallet, t.Tx, t.Kind, t.Index, t.Asset, t.From, t.To, t.Amount.String(),
					t.Direction, t.Block, ms(t.BlockTime)); err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE sync_status SET
				checkpoint = CASE WHEN ? >= checkpoint THEN ? ELSE checkpoint END,
				cursor = CASE WHEN ? >= checkpoint AND ? != '' THEN ? ELSE cursor END,
				scanned = `+s.d.greatest+`(scanned, ?), total = CASE WHEN ? > 0 THEN ? ELSE total END, updated_at = ?
			WHERE wallet = ? AND network = ?`,
			ch.Checkpoint, ch.Checkpoint, ch.Checkpoint, ch.Cursor, ch.Cursor,
			ch.Scanned, ch.Total, ch.Total, ms(time.Now()), wallet, network)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: save chunk of %s on %s: %w", wallet, network, err)
	}
	return nil
}

// WalletAssets lists the assets of a wallet's stored transfers on a network,
// the native coin first.
func (s Wallets) WalletAssets(ctx context.Context, wallet, network string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT asset FROM transfers WHERE wallet = ? AND network = ? ORDER BY asset`, wallet, network)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{NativeAsset}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		if a != NativeAsset {
			out = append(out, a)
		}
	}
	return out, rows.Err()
}

// Holdings are what the chain said about a wallet's balances before the
// start of its history and at the end of a completed scan.
type Holdings struct {
	OpeningAt, ClosingAt uint64
	Opening, Closing     []Holding
}

// Holding is what the chain says a wallet holds of one asset after a block.
type Holding struct {
	Asset  string
	Amount *big.Int
	Known  bool // false when the node could not tell
}

// CompleteScan records the chain's balances and marks the item COMPLETED,
// resetting its retry count and next retry time (docs/retries.md). The
// network's computed balances stay readable, marked stale until FinishWallet
// recalculates them.
func (s Wallets) CompleteScan(ctx context.Context, wallet, network string, h Holdings) error {
	err := s.tx(ctx, func(tx *txn) error {
		now := ms(time.Now())
		cur, err := syncRow(ctx, tx, wallet, network)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		upsert := func(hold Holding, cols string, at uint64) error {
			amount := "0"
			if hold.Known {
				amount = hold.Amount.String()
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO wallet_balances (wallet, network, asset, updated_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (wallet, network, asset) DO NOTHING`, wallet, network, hold.Asset, now)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE wallet_balances SET `+cols+` WHERE wallet = ? AND network = ? AND asset = ?`,
				amount, hold.Known, at, now, wallet, network, hold.Asset)
			return err
		}
		for _, hold := range h.Opening {
			// The balance before the history never changes: an opening read
			// earlier is kept when the node has since pruned that state.
			cols := `opening = ?, opening_known = ?, opening_at = ?, updated_at = ?`
			if !hold.Known {
				cols = `opening = CASE WHEN opening_known THEN opening ELSE ? END, opening_known = opening_known OR ?, opening_at = ?, updated_at = ?`
			}
			if err := upsert(hold, cols, h.OpeningAt); err != nil {
				return err
			}
		}
		for _, hold := range h.Closing {
			if err := upsert(hold, `chain = ?, chain_known = ?, chain_at = ?, updated_at = ?`, h.ClosingAt); err != nil {
				return err
			}
		}
		if err := markStale(ctx, tx, wallet, network, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sync_status SET status = ?, retry_count = 0, next_retry_at = 0, last_error = '',
			finished_at = ?, updated_at = ? WHERE wallet = ? AND network = ?`, SyncCompleted, now, now, wallet, network)
		if err != nil || cur.Status == SyncCompleted {
			return err // a retried CompleteScan announces nothing twice
		}
		return recordEvent(ctx, tx, EventWalletCompleted, walletEvent(wallet, network, SyncCompleted))
	})
	if err != nil {
		return fmt.Errorf("store: complete scan of %s on %s: %w", wallet, network, err)
	}
	return nil
}

// ScanFailure is a failed scan attempt.
type ScanFailure struct {
	Error      string
	Permanent  bool                          // fail at once, no retry
	Now        time.Time                     // the workflow's clock
	MaxRetries int                           // retries before ABANDONED
	Delay      func(retry int) time.Duration // wait before retry n (1-based)
}

// FailScan records a failed attempt (docs/retries.md, backfill): a permanent error leaves the
// item FAILED with no retry; otherwise the retry count goes up and the item
// waits, FAILED, until the next retry time, or, with its retries used up,
// becomes ABANDONED. It returns the row and the wait (0: no retry).
func (s Wallets) FailScan(ctx context.Context, wallet, network string, f ScanFailure) (SyncStatus, time.Duration, error) {
	var (
		out  SyncStatus
		wait time.Duration
	)
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "wallet "+wallet); err != nil {
			return err
		}
		cur, err := syncRow(ctx, tx, wallet, network)
		if err != nil {
			return err
		}
		status, retry, next := SyncFailed, cur.RetryCount, int64(0)
		switch {
		case f.Permanent:
		case cur.RetryCount >= f.MaxRetries:
			status = SyncAbandoned
		default:
			retry++
			wait = f.Delay(retry)
			next = ms(f.Now.Add(wait))
		}
		now := ms(time.Now())
		finished := int64(0) // a retry is still to come
		if wait == 0 {
			finished = now
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sync_status SET status = ?, retry_count = ?, next_retry_at = ?, last_error = ?,
			finished_at = ?, updated_at = ? WHERE wallet = ? AND network = ?`,
			status, retry, next, f.Error, finished, now, wallet, network); err != nil {
			return err
		}
		if status == SyncAbandoned && cur.Status != SyncAbandoned {
			if err := recordEvent(ctx, tx, EventWalletAbandoned, walletEvent(wallet, network, SyncAbandoned)); err != nil {
				return err
			}
		}
		out, err = syncRow(ctx, tx, wallet, network)
		return err
	})
	if err != nil {
		return SyncStatus{}, 0, fmt.Errorf("store: fail scan of %s on %s: %w", wallet, network, err)
	}
	return out, wait, nil
}

// Balance is one asset of a wallet on a network: what its stored transfers
// add up to and whether that matches what the chain says.
type Balance struct {
	Network      string
	Asset        string
	Opening      *big.Int // before the start of the history; when the node could not say, 0 or what FinishWallet's rules derived
	OpeningKnown bool
	OpeningAt    uint64
	Computed     *big.Int // opening + received − sent − fees
	Chain        *big.Int // what the chain says at ChainAt; nil when not known
	ChainAt      uint64
	Reconciled   *bool // nil: could not be checked
	Detail       string
	ComputedAt   time.Time // when Computed was computed (zero: never, or before it was recorded)
	Stale        bool      // the network went back to work since: Computed is its last value, awaiting recalculation
	UpdatedAt    time.Time
}

// markStale marks a network's balances stale: its item went back to work,
// so what was computed awaits the next FinishWallet.
func markStale(ctx context.Context, tx *txn, wallet, network string, now int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE wallet_balances SET stale = ?, updated_at = ? WHERE wallet = ? AND network = ?`,
		true, now, wallet, network)
	return err
}

// FinishRows is what FinishWallet reads of a wallet, under its lock, for
// the rules that finish it: the networks that are done (SyncStatus.Done).
type FinishRows struct {
	Transfers []StoredTransfer     // every stored transfer (network, tx, kind, asset, amount, direction) of the done networks, by network and tx
	Balances  []Balance            // one per asset held or moved on each done network, as stored
	Status    map[string]SyncState // each network's backfill, done or not
}

// FinishResults is what the rules made of FinishRows, for FinishWallet to
// store.
type FinishResults struct {
	Classes  []TxClass // one per transaction
	Balances []Balance // the rows' balances with Computed, Reconciled and Detail set, and Opening when not known
}

// TxClass is the class of one of a wallet's transactions.
type TxClass struct {
	Network string
	Tx      string
	Class   string
}

// FinishWallet runs once none of a wallet's networks is PENDING or RUNNING
// (docs/backfill.md, "Finish"): under the wallet's lock and in
// one transaction, it reads the transfers and balances of the networks that
// are done, has finish classify the transfers and recalculate and reconcile
// the balances, and stores what it says, the balances no longer stale. A
// network that failed and waits for its retry is left as it is: its last
// computed balances stay readable, stale. While a network is PENDING or
// RUNNING it changes nothing and returns ErrWalletBusy. It returns all of
// the wallet's balances.
func (s Wallets) FinishWallet(ctx context.Context, wallet string, finish func(FinishRows) FinishResults) ([]Balance, error) {
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.d.lock(ctx, tx, "wallet "+wallet); err != nil {
			return err
		}
		now := ms(time.Now())
		rows, err := finishRows(ctx, tx, wallet, now)
		if err != nil {
			return err
		}
		return saveFinish(ctx, tx, wallet, now, finish(rows))
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish wallet %s: %w", wallet, err)
	}
	return s.Balances(ctx, wallet)
}

// finishRows reads what finishing a wallet works on, first adding a balance
// row for every asset a done network has transfers of; ErrWalletBusy when a
// network is PENDING or RUNNING.
func finishRows(ctx context.Context, tx *txn, wallet string, now int64) (FinishRows, error) {
	out := FinishRows{Status: map[string]SyncState{}}
	sts, err := syncRows(ctx, tx, `s.wallet = ?`, wallet)
	if err != nil {
		return out, err
	}
	done := map[string]bool{}
	for _, st := range sts {
		if st.Status.Active() {
			return out, ErrWalletBusy
		}
		out.Status[st.Network] = st.Status
		done[st.Network] = st.Done()
	}
	rows, err := tx.QueryContext(ctx, `SELECT network, tx, kind, asset, amount, direction FROM transfers WHERE wallet = ? ORDER BY network, tx`, wallet)
	if err != nil {
		return out, err
	}
	type assetKey struct{ network, asset string }
	var keys []assetKey
	seen := map[assetKey]bool{}
	for rows.Next() {
		var t StoredTransfer
		var amount string
		if err := rows.Scan(&t.Network, &t.Tx, &t.Kind, &t.Asset, &amount, &t.Direction); err != nil {
			rows.Close()
			return out, err
		}
		if !done[t.Network] {
			continue
		}
		v, ok := new(big.Int).SetString(amount, 10)
		if !ok {
			rows.Close()
			return out, fmt.Errorf("transfer amount %q is not a decimal", amount)
		}
		t.Amount = v
		out.Transfers = append(out.Transfers, t)
		if k := (assetKey{t.Network, t.Asset}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO wallet_balances (wallet, network, asset, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (wallet, network, asset) DO NOTHING`, wallet, k.network, k.asset, now); err != nil {
			return out, err
		}
	}
	bals, err := balances(ctx, tx, wallet)
	if err != nil {
		return out, err
	}
	for _, b := range bals {
		if done[b.Network] {
			out.Balances = append(out.Balances, b)
		}
	}
	return out, nil
}

// saveFinish stores the transfers' classes and the balances' outcomes.
func saveFinish(ctx context.Context, tx *txn, wallet string, now int64, res FinishResults) error {
	if len(res.Classes) > 0 {
		stmt, err := tx.PrepareContext(ctx, `UPDATE transfers SET class = ? WHERE wallet = ? AND network = ? AND tx = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, c := range res.Classes {
			if _, err := stmt.ExecContext(ctx, c.Class, wallet, c.Network, c.Tx); err != nil {
				return err
			}
		}
	}
	for _, b := range res.Balances {
		var reconciled any // NULL: not checked
		if b.Reconciled != nil {
			reconciled = *b.Reconciled
		}
		// An opening the chain did not say is what the rules derived.
		if _, err := tx.ExecContext(ctx, `UPDATE wallet_balances SET opening = CASE WHEN opening_known THEN opening ELSE ? END,
			computed = ?, reconciled = ?, detail = ?, computed_at = ?, stale = ?, updated_at = ?
			WHERE wallet = ? AND network = ? AND asset = ?`, b.Opening.String(), b.Computed.String(), reconciled, b.Detail, now, false, now, wallet, b.Network, b.Asset); err != nil {
			return err
		}
	}
	return nil
}

// Balances returns a wallet's balances per network and asset, the native
// coin first.
func (s Wallets) Balances(ctx context.Context, wallet string) ([]Balance, error) {
	return balances(ctx, s.r, wallet)
}

func balances(ctx context.Context, q querier, wallet string) ([]Balance, error) {
	rows, err := q.QueryContext(ctx, `SELECT network, asset, opening, opening_known, opening_at, computed, chain, chain_known, chain_at,
		reconciled, detail, computed_at, stale, updated_at FROM wallet_balances WHERE wallet = ?
		ORDER BY network, CASE WHEN asset = ? THEN 0 ELSE 1 END, asset`, wallet, NativeAsset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Balance
	for rows.Next() {
		var (
			b                      Balance
			opening, computed, chn string
			chainKnown             bool
			reconciled             sql.NullBool
			computedAt, updated    int64
		)
		if err := rows.Scan(&b.Network, &b.Asset, &opening, &b.OpeningKnown, &b.OpeningAt, &computed, &chn, &chainKnown, &b.ChainAt,
			&reconciled, &b.Detail, &computedAt, &b.Stale, &updated); err != nil {
			return nil, err
		}
		b.Opening = parseAmount(opening)
		if computed != "" {
			b.Computed = parseAmount(computed)
		}
		if chainKnown {
			b.Chain = parseAmount(chn)
		}
		if reconciled.Valid {
			b.Reconciled = &reconciled.Bool
		}
		b.ComputedAt, b.UpdatedAt = fromMS(computedAt), fromMS(updated)
		out = append(out, b)
	}
	return out, rows.Err()
}

func parseAmount(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int)
	}
	return v
}

// StoredTransfer is a transfer as stored, with its class.
type StoredTransfer struct {
	TransferRecord
	Network string
	Class   string
	seq     int64
}

// TransferFilter selects a page of a wallet's transfers.
type TransferFilter struct {
	Wallet  string
	Network string // "" = every network
	Limit   int
	Cursor  string
}

// ListTransfers returns a page of a wallet's transfers in the order they
// were found (oldest block first per network) and the next page's cursor
// ("" on the last page).
func (s Wallets) ListTransfers(ctx context.Context, f TransferFilter) ([]StoredTransfer, string, error) {
	return listPage(ctx, s.r, "list transfers", f.Limit, f.Cursor, func(after int64) (string, []any) {
		q := `SELECT seq, network, tx, kind, idx, asset, sender, recipient, amount, direction, class, block, block_time
			FROM transfers WHERE wallet = ? AND seq > ?`
		args := []any{f.Wallet, after}
		if f.Network != "" {
			q += ` AND network = ?`
			args = append(args, f.Network)
		}
		return q, args
	}, func(rows *sql.Rows) (StoredTransfer, int64, error) {
		var (
			t              StoredTransfer
			kind, dir, amt string
			blockTime      int64
		)
		if err := rows.Scan(&t.seq, &t.Network, &t.Tx, &kind, &t.Index, &t.Asset, &t.From, &t.To, &amt, &dir, &t.Class, &t.Block, &blockTime); err != nil {
			return t, 0, err
		}
		t.Kind, t.Direction, t.Amount, t.BlockTime = kind, dir, parseAmount(amt), fromMS(blockTime)
		return t, t.seq, nil
	})
}

// walletEvent is the data of a wallet event: one (wallet, network) item.
func walletEvent(wallet, network string, status SyncState) EventData {
	return EventData{ID: wallet + "/" + network, Status: string(status),
		Links: map[string]string{"wallet": "/v1/wallets/" + wallet}}
}
