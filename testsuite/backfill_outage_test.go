package testsuite

import (
	"context"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"
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

// anvilBinary is the anvil .ci/run installs into .tools/npm, or
// $KEEPER_ANVIL_BIN. Missing, the test fails on CI and skips elsewhere.
func anvilBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KEEPER_ANVIL_BIN"); p != "" {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", ".tools", "npm", "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil"))
	require.NoError(t, err)
	if _, err := os.Stat(p); err != nil {
		msg := "anvil not found at " + p + " and KEEPER_ANVIL_BIN is unset: .ci/run's step \"npm test tools\" installs it " +
			"(npm install --prefix .tools/npm --save-exact @foundry-rs/anvil-linux-amd64@1.7.1)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// anvilGenesisBalance is what anvil gives each of its dev accounts at
// genesis (--balance, in ether).
var anvilGenesisBalance = new(big.Int).Mul(big.NewInt(10_000), big.NewInt(1e18))

// startPrunedAnvil runs anvil as a node that keeps the state of its last
// 128 blocks only, as a provider's full node does: asked for an older
// block's state, it answers BlockOutOfRangeError (--prune-history 128, which
// keeps no state on disk either). Its finalized block is 2 behind the head
// (--slots-in-an-epoch 1). Cancun, not anvil's default Prague: Prague's
// block-hash history contract (EIP-2935) makes each block anvil mines
// slower as the chain grows, minutes for 10,000 blocks.
func startPrunedAnvil(t *testing.T) *testchain.Anvil {
	t.Helper()
	a, err := testchain.StartAnvil(context.Background(), testchain.AnvilOptions{Bin: anvilBinary(t), Dir: t.TempDir(), Port: freePort(t),
		ChainID: 42793, Args: []string{"--hardfork", "cancun", "--prune-history", "128", "--slots-in-an-epoch", "1", "--balance", "10000"}})
	require.NoError(t, err)
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("anvil's output:\n%s", a.Output())
		}
	})
	return a
}

// fundedHistory gives anvil's second dev account, funded at genesis, a
// history of rounds rounds over more than rounds·blocks blocks, and checks
// that the node no longer has the state of the block before it.
func fundedHistory(t *testing.T, chain *testchain.Anvil, rounds, blocks int) *testchain.EVMHistory {
	t.Helper()
	h, err := testchain.BuildEVMHistory(context.Background(), chain, testchain.EVMOptions{Rounds: rounds, BlocksPerRound: blocks, Wallet: testchain.AnvilKey(1)})
	require.NoError(t, err)
	_, err = testchain.EVMBalance(context.Background(), chain.URL(), h.Wallet, 0)
	require.ErrorContains(t, err, "BlockOutOfRangeError", "the node keeps no state that old: the genesis allocation is not there to read")
	return h
}

// funding is what the test gave the wallet: per asset, its genesis
// allocation and the transfers the test made, less the fees its
// transactions paid, read from their receipts.
func funding(t *testing.T, url string, h *testchain.EVMHistory) map[string]*big.Int {
	t.Helper()
	out := map[string]*big.Int{scan.NativeAsset: new(big.Int).Set(anvilGenesisBalance), strings.ToLower(h.Token.Hex()): new(big.Int)}
	for _, e := range h.Expected {
		switch e.Direction {
		case scan.In:
			out[e.Asset].Add(out[e.Asset], e.Amount)
		case scan.Out:
			out[e.Asset].Sub(out[e.Asset], e.Amount)
		}
	}
	ec, err := ethclient.Dial(url)
	require.NoError(t, err)
	defer ec.Close()
	for _, tx := range h.Sent {
		r, err := ec.TransactionReceipt(context.Background(), tx)
		require.NoError(t, err)
		fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
		out[scan.NativeAsset].Sub(out[scan.NativeAsset], fee)
	}
	return out
}

// PostgreSQL goes away for a minute in the middle of the backfill of more
// than 10,000 blocks, on a real node that keeps no state that old (the
// measurement: a store outage cost the wallet one of its attempts, then the
// wallet could never finish, its balance at block 0 out of the node's
// reach). The scan waits for the store and goes on: the wallet completes on
// its first attempt, with exactly its transfers, and balances that are the
// funding the test knows and the node's balance at the head
// (docs/backfill.md, Outages; Balances on a node that keeps recent state
// only).
func TestAStoreOutageOfAMinuteMidBackfillOfTenThousandBlocksOnANodeWithoutOldStateCostsTheWalletNoAttempt(t *testing.T) {
	endToEnd(t)
	chain := startPrunedAnvil(t)
	h := fundedHistory(t, chain, 40, 250)
	require.GreaterOrEqual(t, chain.Finalized(), uint64(10_000))
	want := funding(t, chain.URL(), h)
	proxy, cut, look := proxiedPostgres(t)

	const stallAt = 5000
	g, rpc := newGate(t, chain.URL(), stallAt)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := backfillConfig(dir, rpc, "")
	cfg.Backfill.EVMChunkBlocks = 25
	cfg.Backfill.Reconcile = time.Second
	node := startBackfillNode(t, srv, cfg, cut)
	wallet := strings.ToLower(h.Wallet.Hex())
	ctx := context.Background()

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	// The scan waits at the gate, half way in.
	var before store.SyncStatus
	require.Eventually(t, func() bool {
		var err error
		before, err = look.SyncStatus(ctx, wallet, scan.Etherlink)
		return err == nil && before.Checkpoint >= stallAt
	}, 2*time.Minute, 20*time.Millisecond)

	proxy.Cut()
	g.release()
	outage := time.NewTimer(time.Minute) // the fault's length, not a wait for a result
	<-outage.C
	row, err := look.SyncStatus(ctx, wallet, scan.Etherlink)
	require.NoError(t, err)
	assert.Equal(t, store.SyncRunning, row.Status, "nothing could be recorded while the store was away")
	assert.Less(t, row.Checkpoint, row.Target, "the outage came in the middle of the scan")
	require.NoError(t, proxy.Restore())

	w := waitWallet(t, node.APIAddr(), wallet, 3*time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	n := w.Networks[0]
	assert.Equal(t, before.Attempts, n.Attempts, "the outage cost the wallet no attempt")
	assert.Equal(t, 1, n.Attempts)
	assert.Zero(t, n.RetryCount)
	assert.Empty(t, n.LastError)

	got, fees := storedTransfers(t, look, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	assert.Equal(t, len(h.Sent), fees)
	head, err := testchain.EVMBalance(ctx, chain.URL(), h.Wallet, chain.Head())
	require.NoError(t, err)
	require.Equal(t, want[scan.NativeAsset].String(), head.String(), "the node's balance at the head is the funding the test knows")
	require.Len(t, w.Balances, 2)
	native, token := w.Balances[0], w.Balances[1]
	assert.Equal(t, want[scan.NativeAsset].String(), native.Balance, "the genesis allocation, plus the transfers, less the fees")
	assert.Equal(t, head.String(), native.Chain)
	assert.Equal(t, anvilGenesisBalance.String(), native.Opening, "the genesis allocation, derived back from the head")
	assert.Nil(t, native.Reconciled, "the node cannot say what the wallet held at block 0: nothing to check the derived opening against")
	assert.Contains(t, native.Detail, "KEEPER_EVM_ARCHIVE_RPC_URL", "the detail names the setting that would check it")
	assert.Equal(t, strings.ToLower(h.Token.Hex()), token.Asset)
	assert.Equal(t, want[token.Asset].String(), token.Balance)
	require.NotNil(t, token.Reconciled, token.Detail)
	assert.True(t, *token.Reconciled, "no token before the history: an opening of 0 reconciles")
}

// An archive endpoint that is no archive (here the node itself) cannot say
// what the wallet held before its history: the wallet fails at once, on its
// first attempt, with an error that names the setting, instead of going
// through five retries to ABANDONED.
func TestAnArchiveEndpointWithoutOldStateFailsTheWalletAtOnceNamingTheSetting(t *testing.T) {
	endToEnd(t)
	chain := startPrunedAnvil(t)
	h := fundedHistory(t, chain, 4, 100)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, chain.URL(), "")
	cfg.EVM.ArchiveRPCURL = chain.URL()
	node := startBackfillNode(t, srv, cfg, st)
	wallet := strings.ToLower(h.Wallet.Hex())

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	w := waitWallet(t, node.APIAddr(), wallet, 2*time.Minute)
	n := w.Networks[0]
	assert.Equal(t, "FAILED", n.Status, "%+v", n)
	assert.Equal(t, 1, n.Attempts)
	assert.Zero(t, n.RetryCount, "a permanent error: no retry")
	assert.Contains(t, n.LastError, "the wallet's balances at block 0 are in neither the node's state nor that of the archive endpoint "+
		"KEEPER_EVM_ARCHIVE_RPC_URL (no state of block 0: BlockOutOfRangeError")
	assert.Contains(t, n.LastError, "set KEEPER_EVM_ARCHIVE_RPC_URL to an archive node of this chain")
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
