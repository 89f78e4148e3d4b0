package backfill_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/workflows"
)

// syncSignals lists the WalletSync signals handed to Temporal.
func syncSignals(c *temporalfake.Client) []workflows.SyncSignal {
	var out []workflows.SyncSignal
	for _, s := range c.Starts() {
		out = append(out, s.SignalArg.(workflows.SyncSignal))
	}
	return out
}

const reconWallet = "0x00000000000000000000000000000000000000aa"

func newReconcileFixture(t *testing.T) (*store.Store, *temporalfake.Client, *backfill.Dispatcher) {
	t.Helper()
	st := storetest.SQLite(t)
	tc := &temporalfake.Client{}
	d := &backfill.Dispatcher{Store: st, Temporal: tc, Sweep: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return st, tc, d
}

func TestReconcileHandsTemporalAgainOnlyTheItemsNoWorkflowWorksOn(t *testing.T) {
	st, tc, d := newReconcileFixture(t)
	ctx := context.Background()
	_, _, err := st.AddWallet(ctx, reconWallet, []store.NetworkStart{{Network: "etherlink"}, {Network: "solana"}})
	require.NoError(t, err)
	_, err = d.Reconcile(ctx, time.Now().Add(time.Minute)) // hands the new wallet over, as the API's dispatcher would
	require.NoError(t, err)
	require.Len(t, syncSignals(tc), 1)

	// etherlink scans (RUNNING); solana failed and its retry is overdue.
	_, err = st.BeginScan(ctx, reconWallet, "etherlink")
	require.NoError(t, err)
	_, _, err = st.FailScan(ctx, reconWallet, "solana", store.ScanFailure{Error: "rpc down", Now: time.Now().Add(-time.Hour), MaxRetries: 5,
		Delay: func(int) time.Duration { return time.Minute }})
	require.NoError(t, err)
	tc.SetStatus(workflows.BackfillWorkflowID("etherlink", reconWallet), enums.WORKFLOW_EXECUTION_STATUS_RUNNING)

	n, err := d.Reconcile(ctx, time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the overdue retry whose Backfill is gone; not the item whose Backfill runs")
	require.Len(t, syncSignals(tc), 2)
	assert.Equal(t, []workflows.NetworkGen{{Network: "solana", Gen: 2}}, syncSignals(tc)[1].Networks, "a new generation, so a running WalletSync starts it too")
	row, err := st.SyncStatus(ctx, reconWallet, "solana")
	require.NoError(t, err)
	assert.Equal(t, store.SyncPending, row.Status)
	assert.Equal(t, 1, row.RetryCount, "the retry count goes on")

	n, err = d.Reconcile(ctx, time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Zero(t, n, "solana is handed over again: its running WalletSync starts it")

	// The etherlink Backfill failed and nothing runs its item any more.
	tc.SetStatus(workflows.BackfillWorkflowID("etherlink", reconWallet), enums.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	n, err = d.Reconcile(ctx, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n, "a row that changed since quiet is left for the next pass")
	n, err = d.Reconcile(ctx, time.Now().Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []workflows.NetworkGen{{Network: "etherlink", Gen: 2}}, syncSignals(tc)[2].Networks)
	row, err = st.SyncStatus(ctx, reconWallet, "etherlink")
	require.NoError(t, err)
	assert.Equal(t, store.SyncPending, row.Status)
	assert.Equal(t, 1, row.Attempts, "the checkpoint and attempts are kept: the scan goes on where it stopped")
}

func TestAWalletAddedAgainWhileStuckRunningIsHandedToTemporalAgain(t *testing.T) {
	st, tc, d := newReconcileFixture(t)
	ctx := context.Background()
	nets := []store.NetworkStart{{Network: "etherlink"}}
	_, _, err := st.AddWallet(ctx, reconWallet, nets)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	require.Eventually(t, func() bool { return len(syncSignals(tc)) == 1 }, 10*time.Second, 10*time.Millisecond)
	_, err = st.BeginScan(ctx, reconWallet, "etherlink")
	require.NoError(t, err)

	// The WalletSync that runs will see to it: the add changes nothing.
	d.Recheck(reconWallet)
	d.Recheck(reconWallet + "-unknown")
	require.Never(t, func() bool { return len(syncSignals(tc)) > 1 }, 300*time.Millisecond, 10*time.Millisecond)

	// Neither the WalletSync nor the Backfill runs: stuck RUNNING.
	tc.SetStatus(workflows.WalletWorkflowID(reconWallet), enums.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	d.Recheck(reconWallet)
	require.Eventually(t, func() bool { return len(syncSignals(tc)) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []workflows.NetworkGen{{Network: "etherlink", Gen: 2}}, syncSignals(tc)[1].Networks)
	stop()
	<-done
}
