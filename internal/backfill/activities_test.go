package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/workflows"
)

func TestAChunkReachesTheStoreWhole(t *testing.T) {
	tr := scan.Transfer{Tx: "0x01", Kind: scan.KindToken, Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: scan.Out, Block: 12, BlockTime: time.Unix(12, 0)}
	got := backfill.ChunkRecord(scan.Chunk{Transfers: []scan.Transfer{tr}, Cursor: scan.Cursor{Block: 13, Sig: "sig"}, Scanned: 5, Total: 9})
	assert.Equal(t, store.Chunk{Transfers: []store.TransferRecord{{Tx: "0x01", Kind: "token", Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: "out", Block: 12, BlockTime: time.Unix(12, 0)}}, Checkpoint: 13, Cursor: "sig", Scanned: 5, Total: 9}, got)
	assert.Equal(t, tr, backfill.TransferOf(got.Transfers[0]), "and comes back as it went")

	assert.Equal(t, []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt"}},
		backfill.HoldingRecords([]scan.Holding{{Asset: scan.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt", Detail: "pruned"}}))
}

// The workflows' outcome vocabulary is recorded in their histories; it must
// keep the values the store's statuses have always had.
func TestBackfillOutcomesHaveTheStoresValues(t *testing.T) {
	assert.Equal(t, string(store.SyncCompleted), workflows.BackfillCompleted)
	assert.Equal(t, string(store.SyncFailed), workflows.BackfillFailed)
	assert.Equal(t, string(store.SyncAbandoned), workflows.BackfillAbandoned)
}

// The store names the native coin as the scanners do: the activities pass
// the scanners' asset names to the store as they are.
func TestTheStoreNamesTheNativeCoinAsTheScannersDo(t *testing.T) {
	assert.Equal(t, scan.NativeAsset, store.NativeAsset)
}

// chainOf is a scanner of a made-up chain: one incoming transfer of 1 in
// every block, and balances as closing says.
type chainOf struct {
	heads   []uint64 // Finalized answers these in turn, then the last one
	closing func(at uint64) scan.Holding
	asked   int
}

func (c *chainOf) Network() string                       { return scan.Etherlink }
func (c *chainOf) Unit() string                          { return "blocks" }
func (c *chainOf) ParseAddress(s string) (string, error) { return evmscan.ParseAddress(s) }
func (c *chainOf) Finalized(ctx context.Context) (uint64, error) {
	h := c.heads[min(c.asked, len(c.heads)-1)]
	c.asked++
	return h, nil
}

func (c *chainOf) Scan(ctx context.Context, job scan.Job, emit func(scan.Chunk) error) error {
	for b := max(job.From.Block, job.Start); b <= job.Target; b++ {
		tr := scan.Transfer{Tx: fmt.Sprintf("0x%064x", b), Kind: scan.KindNative, Asset: scan.NativeAsset, From: "0xf", To: job.Wallet,
			Amount: big.NewInt(1), Direction: scan.In, Block: b, BlockTime: time.Unix(int64(b), 0)}
		if err := emit(scan.Chunk{Transfers: []scan.Transfer{tr}, Cursor: scan.Cursor{Block: b + 1}, Scanned: b + 1 - job.Start, Total: job.Target + 1 - job.Start}); err != nil {
			return err
		}
	}
	return nil
}

func (c *chainOf) Holdings(ctx context.Context, wallet string, at uint64, assets []string) ([]scan.Holding, error) {
	out := make([]scan.Holding, len(assets))
	for i, a := range assets {
		out[i] = scan.Holding{Asset: a, Detail: "pruned", Pruned: true}
		if a == scan.NativeAsset {
			out[i] = c.closing(at)
		}
	}
	return out, nil
}

// flakyStore is the store with an outage: its first calls of BeginScan and
// SaveChunk fail as a store that is down does, or with fail.
type flakyStore struct {
	backfill.Scans
	beginsDown, savesDown int
	fail                  error // instead of the outage's error
	begins, saves         int
}

func (f *flakyStore) down(what string) error {
	if f.fail != nil {
		return f.fail
	}
	return fmt.Errorf("store: %s: %w", what, store.ErrUnavailable)
}

func (f *flakyStore) BeginScan(ctx context.Context, wallet, network string) (store.SyncStatus, error) {
	if f.begins++; f.begins <= f.beginsDown {
		return store.SyncStatus{}, f.down("begin scan")
	}
	return f.Scans.BeginScan(ctx, wallet, network)
}

func (f *flakyStore) SaveChunk(ctx context.Context, wallet, network string, ch store.Chunk) error {
	// The outage comes after the first chunk: mid-scan.
	if f.saves++; f.saves > 1 && f.saves <= 1+f.savesDown {
		return f.down("save chunk")
	}
	return f.Scans.SaveChunk(ctx, wallet, network, ch)
}

const scanWallet = "0x52908400098527886e0f7030069857d2e4169ee7"

// scanOnce runs one ScanNetwork attempt of scanWallet on etherlink over st.
func scanOnce(t *testing.T, st backfill.Scans, c *chainOf) (workflows.ScanResult, error) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	acts := &backfill.Activities{Store: st, Scanners: map[string]scan.Scanner{scan.Etherlink: c}, Logger: quiet, StoreRetry: time.Millisecond}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(quiet))
	env := s.NewTestActivityEnvironment()
	backfill.RegisterActivities(env, acts)
	v, err := env.ExecuteActivity(workflows.ScanNetworkActivity, workflows.BackfillRef{Wallet: scanWallet, Network: scan.Etherlink})
	if err != nil {
		return workflows.ScanResult{}, err
	}
	var res workflows.ScanResult
	require.NoError(t, v.Get(&res))
	return res, nil
}

func addScanWallet(t *testing.T) *store.Store {
	t.Helper()
	st := storetest.SQLite(t)
	_, _, err := st.AddWallet(context.Background(), scanWallet, []store.NetworkStart{{Network: scan.Etherlink}})
	require.NoError(t, err)
	return st
}

func known(n uint64) scan.Holding {
	return scan.Holding{Asset: scan.NativeAsset, Amount: new(big.Int).SetUint64(n), Known: true}
}

func TestAStoreThatIsDownMidScanIsWaitedForAndTheAttemptCompletesWithoutCostingTheWalletOne(t *testing.T) {
	st := addScanWallet(t)
	flaky := &flakyStore{Scans: st, beginsDown: 2, savesDown: 5}
	res, err := scanOnce(t, flaky, &chainOf{heads: []uint64{9}, closing: func(at uint64) scan.Holding { return known(at + 1) }})
	require.NoError(t, err)
	assert.Equal(t, 10, res.Transfers, "every block's transfer, each once")
	assert.Equal(t, 3+10+5, flaky.begins+flaky.saves, "the outage's calls were tried again until the store answered")

	row, err := st.SyncStatus(context.Background(), scanWallet, scan.Etherlink)
	require.NoError(t, err)
	assert.Equal(t, store.SyncCompleted, row.Status)
	assert.Equal(t, 1, row.Attempts, "the outage cost the wallet no attempt")
	assert.Zero(t, row.RetryCount)
	assert.Empty(t, row.LastError)
}

func TestAStoreErrorThatIsNoOutageFailsTheAttempt(t *testing.T) {
	st := addScanWallet(t)
	flaky := &flakyStore{Scans: st, savesDown: 1, fail: errors.New("store: save chunk: CHECK constraint failed")}
	_, err := scanOnce(t, flaky, &chainOf{heads: []uint64{9}, closing: func(at uint64) scan.Holding { return known(at + 1) }})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, workflows.ErrTypeScanFailed, app.Type(), "a failed attempt, retried on the backfill schedule")
	assert.Contains(t, app.Error(), "CHECK constraint failed")
}

func TestTheEndOfAScanWhoseStateTheNodeNoLongerHasIsReadAtANewerHead(t *testing.T) {
	st := addScanWallet(t)
	c := &chainOf{heads: []uint64{9, 14}, closing: func(at uint64) scan.Holding {
		if at < 14 {
			return scan.Holding{Asset: scan.NativeAsset, Pruned: true, Detail: "no state of block 9"}
		}
		return known(at + 1)
	}}
	res, err := scanOnce(t, st, c)
	require.NoError(t, err)
	assert.Equal(t, uint64(14), res.Target, "scanned on to the newer head")
	assert.Equal(t, 15, res.Transfers)
}

func TestANodeWithoutTheStateOfItsFinalizedHeadIsAPermanentErrorNamingTheArchiveSetting(t *testing.T) {
	st := addScanWallet(t)
	c := &chainOf{heads: []uint64{9}, closing: func(at uint64) scan.Holding {
		return scan.Holding{Asset: scan.NativeAsset, Pruned: true, Detail: fmt.Sprintf("no state of block %d: BlockOutOfRangeError", at)}
	}}
	_, err := scanOnce(t, st, c)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, workflows.ErrTypePermanent, app.Type(), "no retry can give the node that state")
	assert.Contains(t, app.Error(), "etherlink: the wallet's balances at block 9, the end of the scan: the node has no state of block 9: BlockOutOfRangeError")
	assert.Contains(t, app.Error(), "set KEEPER_EVM_ARCHIVE_RPC_URL to an archive endpoint")
}
