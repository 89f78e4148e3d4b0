package testsuite

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/tcpfault"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/workflows"
)

// proxiedPostgres makes a PostgreSQL store of the test's own and returns a
// store opened through a tcpfault proxy (the node's: the test cuts it) and
// one opened directly (the test's, to look while the node cannot).
func proxiedPostgres(t *testing.T) (*tcpfault.Proxy, *store.Store, *store.Store) {
	t.Helper()
	direct := storetest.PostgresURL(t)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	proxy, err := tcpfault.Start(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	u.Host = proxy.Addr()
	cut := storetest.Open(t, u.String())
	look := storetest.Open(t, direct)
	return proxy, cut, look
}

// PostgreSQL goes away for 90 s in the middle of the backfill of a history
// of more than 10,000 blocks (a wallet once stayed RUNNING for good after
// that): the failed attempt is recorded once the store is back, its retry
// goes on from the checkpoint, and the wallet completes with exactly its
// transfers and the chain's balances (docs/backfill.md, Outages).
func TestAStoreOutageOfNinetySecondsDuringABackfillOfTenThousandBlocksStillCompletesTheWallet(t *testing.T) {
	endToEnd(t)
	proxy, cut, look := proxiedPostgres(t)
	chain, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { chain.Stop() })
	h, err := testchain.BuildEVMHistory(context.Background(), chain, testchain.EVMOptions{Rounds: 60, BlocksPerRound: 170})
	require.NoError(t, err)
	require.GreaterOrEqual(t, chain.Finalized(), uint64(10000))

	const stallAt = 4992
	g, rpc := newGate(t, chain.URL(), stallAt)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := backfillConfig(dir, rpc, "")
	cfg.Backfill.EVMChunkBlocks = 16
	cfg.Backfill.Reconcile = time.Second
	node := startBackfillNode(t, srv, cfg, cut)
	wallet := strings.ToLower(h.Wallet.Hex())

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	// The scan waits at the gate, a third of the way in.
	require.Eventually(t, func() bool {
		row, err := look.SyncStatus(context.Background(), wallet, scan.Etherlink)
		return err == nil && row.Checkpoint >= stallAt
	}, 2*time.Minute, 20*time.Millisecond)

	proxy.Cut()
	g.release()
	outage := time.NewTimer(90 * time.Second) // the fault's length, not a wait for a result
	<-outage.C
	row, err := look.SyncStatus(context.Background(), wallet, scan.Etherlink)
	require.NoError(t, err)
	assert.Equal(t, store.SyncRunning, row.Status, "nothing could be recorded while the store was away")
	assert.Less(t, row.Checkpoint, row.Target, "the outage came in the middle of the scan")
	require.NoError(t, proxy.Restore())

	w := waitWallet(t, node.APIAddr(), wallet, 5*time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	row, err = look.SyncStatus(context.Background(), wallet, scan.Etherlink)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, row.Attempts, 2, "the attempt the outage broke was retried")
	got, fees := storedTransfers(t, look, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	assert.Equal(t, len(h.Sent), fees)
	checkReconciled(t, w, 2)
	bal, err := testchain.EVMBalance(context.Background(), chain.URL(), h.Wallet, chain.Head())
	require.NoError(t, err)
	assert.Equal(t, bal.String(), w.Balances[0].Balance, "the native balance is the chain's")
}

// A WalletSync terminated by hand takes its Backfills with it; the item
// that was waiting for its retry is retried anyway, by the workers'
// reconciliation once its next retry time has passed, and completes.
func TestAFailedItemOfAWalletSyncTerminatedByHandIsStillRetried(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 5)
	require.NoError(t, err)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, "", d.URL())
	// Long enough a wait to terminate the WalletSync in.
	cfg.Backfill.RetryBase, cfg.Backfill.RetryCap = 3*time.Second, 3*time.Second
	cfg.Backfill.Reconcile = 500 * time.Millisecond
	node := startBackfillNode(t, srv, cfg, st)
	wallet := h.Wallet.PublicKey().String()
	ctx := context.Background()

	d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"}) // every call fails until cleared
	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code)
	var waiting store.SyncStatus
	require.Eventually(t, func() bool {
		waiting, err = st.SyncStatus(ctx, wallet, scan.Solana)
		return err == nil && waiting.Waiting()
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, node.Client.TerminateWorkflow(ctx, workflows.WalletWorkflowID(wallet), "", "terminated by hand (a test)"))
	backfillID := workflows.BackfillWorkflowID(scan.Solana, wallet)
	require.Eventually(t, func() bool {
		desc, err := node.Client.DescribeWorkflowExecution(ctx, backfillID, "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_TERMINATED
	}, 30*time.Second, 20*time.Millisecond, "the WalletSync's child goes with it")
	d.ClearFaults()

	w := waitWallet(t, node.APIAddr(), wallet, time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	row, err := st.SyncStatus(ctx, wallet, scan.Solana)
	require.NoError(t, err)
	// At least one more attempt: the retry the reconciliation handed
	// Temporal. On a loaded machine it may come due before the fault is
	// cleared, fail once more and be retried again, as an outage would.
	assert.Greater(t, row.Attempts, waiting.Attempts, "the item was retried")
	checkReconciled(t, w, 1)
}

// An item left RUNNING with no workflow (its WalletSync, and with it its
// Backfill, terminated mid-scan) is restarted by adding the wallet again,
// without waiting for the workers' next reconciliation.
func TestAddingAWalletAgainRestartsAnItemStuckRunning(t *testing.T) {
	endToEnd(t)
	chain, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { chain.Stop() })
	h, err := testchain.BuildEVMHistory(context.Background(), chain, testchain.EVMOptions{Rounds: 8, BlocksPerRound: 5})
	require.NoError(t, err)
	const stallAt = 20
	g, rpc := newGate(t, chain.URL(), stallAt)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, rpc, "")
	cfg.Backfill.EVMChunkBlocks = 5
	cfg.Backfill.Reconcile = time.Hour // only at start: the re-add must do it
	node := startBackfillNode(t, srv, cfg, st)
	wallet := strings.ToLower(h.Wallet.Hex())
	ctx := context.Background()

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool {
		row, err := st.SyncStatus(ctx, wallet, scan.Etherlink)
		return err == nil && row.Checkpoint >= stallAt
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, node.Client.TerminateWorkflow(ctx, workflows.WalletWorkflowID(wallet), "", "terminated by hand (a test)"))
	require.Eventually(t, func() bool {
		desc, err := node.Client.DescribeWorkflowExecution(ctx, workflows.BackfillWorkflowID(scan.Etherlink, wallet), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_TERMINATED
	}, 30*time.Second, 20*time.Millisecond)
	select { // the scan attempt learns at its next heartbeat that its workflow is gone, and gives up its held request
	case <-g.aborted:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the terminated Backfill's scan attempt went on")
	}
	g.release()
	row, err := st.SyncStatus(ctx, wallet, scan.Etherlink)
	require.NoError(t, err)
	require.Equal(t, store.SyncRunning, row.Status, "stuck: RUNNING, and no workflow works on it")

	code, w := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	assert.Equal(t, http.StatusOK, code, "the item was at work: the store is unchanged")
	assert.Equal(t, "RUNNING", w.Status)
	w = waitWallet(t, node.APIAddr(), wallet, time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	got, _ := storedTransfers(t, st, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	checkReconciled(t, w, 2)
}

// A WalletSync terminated while its network's scan is in flight: the scan
// may still complete (its attempt learns of the termination late) or be
// left RUNNING. Either way the workers' reconciliation sees to it that the
// wallet is finished: its balances computed and reconciled with the chain.
func TestAWalletWhoseWalletSyncWasTerminatedMidScanIsStillFinished(t *testing.T) {
	endToEnd(t)
	chain, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { chain.Stop() })
	h, err := testchain.BuildEVMHistory(context.Background(), chain, testchain.EVMOptions{Rounds: 8, BlocksPerRound: 5})
	require.NoError(t, err)
	const stallAt = 20
	g, rpc := newGate(t, chain.URL(), stallAt)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, rpc, "")
	cfg.Backfill.EVMChunkBlocks = 5
	cfg.Backfill.Reconcile = 500 * time.Millisecond
	node := startBackfillNode(t, srv, cfg, st)
	wallet := strings.ToLower(h.Wallet.Hex())
	ctx := context.Background()

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool {
		row, err := st.SyncStatus(ctx, wallet, scan.Etherlink)
		return err == nil && row.Checkpoint >= stallAt
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, node.Client.TerminateWorkflow(ctx, workflows.WalletWorkflowID(wallet), "", "terminated by hand (a test)"))
	g.release()

	w := waitWallet(t, node.APIAddr(), wallet, time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	got, _ := storedTransfers(t, st, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	checkReconciled(t, w, 2)
}
