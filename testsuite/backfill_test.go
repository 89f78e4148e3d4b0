package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// fiveThousandBlocks starts a local EVM chain holding a wallet history of
// more than 500 transfers over more than 5,000 blocks, plus unrelated traffic.
func fiveThousandBlocks(t *testing.T) (*devchain.Chain, *testchain.EVMHistory) {
	t.Helper()
	// Blocks are sealed by the history builder: no block timer.
	c, err := devchain.Start(context.Background(), devchain.Options{Dir: t.TempDir(), BlockTime: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { c.Stop() })
	h, err := testchain.BuildEVMHistory(context.Background(), c, testchain.EVMOptions{Rounds: 120, BlocksPerRound: 42})
	require.NoError(t, err)
	require.GreaterOrEqual(t, c.Finalized(), uint64(5000))
	require.GreaterOrEqual(t, len(h.Expected), 500)
	return c, h
}

// backfillConfig is testConfig with the backfill networks pointed at the
// given endpoints ("" leaves a network out) and quick retries.
func backfillConfig(dir, evmURL, solanaURL string) config.Config {
	cfg := testConfig(dir)
	cfg.Chains = nil
	if evmURL != "" {
		cfg.Chains, cfg.EVM.RPCURL = append(cfg.Chains, scan.Etherlink), evmURL
	}
	if solanaURL != "" {
		cfg.Chains, cfg.Solana.RPCURL = append(cfg.Chains, scan.Solana), solanaURL
	}
	cfg.Backfill.RetryBase, cfg.Backfill.RetryCap = 50*time.Millisecond, 400*time.Millisecond
	cfg.Backfill.Heartbeat = time.Second
	return cfg
}

// startBackfillNode starts a node whose anchoring runs on the stub chain
// (the tests here only backfill) and whose backfill scans the configured
// endpoints.
func startBackfillNode(t *testing.T, srv *devserver.Server, cfg config.Config, st *store.Store) *node.Node {
	t.Helper()
	_, chs := stubChains(cfg)
	return startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)
}

type walletStatus struct {
	Address  string `json:"address"`
	Status   string `json:"status"`
	Done     bool   `json:"done"`
	Networks []struct {
		Network  string `json:"network"`
		Status   string `json:"status"`
		Progress struct {
			Scanned, Total uint64
		} `json:"progress"`
		Transfers  int    `json:"transfers"`
		Attempts   int    `json:"attempts"`
		RetryCount int    `json:"retry_count"`
		LastError  string `json:"last_error"`
	} `json:"networks"`
	Balances []struct {
		Network    string `json:"network"`
		Asset      string `json:"asset"`
		Balance    string `json:"balance"`
		Chain      string `json:"chain_balance"`
		Opening    string `json:"opening_balance"`
		Reconciled *bool  `json:"reconciled"`
		Detail     string `json:"detail"`
	} `json:"balances"`
	Reconciled *bool `json:"reconciled"`
}

func addWallet(t *testing.T, apiAddr, body string) (int, walletStatus) {
	t.Helper()
	resp, err := http.Post("http://"+apiAddr+"/v1/wallets", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var w walletStatus
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(raw, &w), string(raw))
	return resp.StatusCode, w
}

func getWallet(t *testing.T, apiAddr, addr string) walletStatus {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/v1/wallets/" + addr)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var w walletStatus
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&w))
	return w
}

// waitWallet polls the API until the wallet's backfill is done.
func waitWallet(t *testing.T, apiAddr, addr string, limit time.Duration) walletStatus {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		w := getWallet(t, apiAddr, addr)
		if w.Done {
			return w
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "backfill did not finish", "%+v", w)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type transferKey struct {
	tx, kind, asset string
}

// storedTransfers reads every stored transfer of the wallet on a network,
// failing on a duplicate.
func storedTransfers(t *testing.T, st *store.Store, wallet, network string) (map[transferKey]store.StoredTransfer, int) {
	t.Helper()
	out := map[transferKey]store.StoredTransfer{}
	fees, cursor := 0, ""
	for {
		page, next, err := st.ListTransfers(context.Background(), store.TransferFilter{Wallet: wallet, Network: network, Limit: 1000, Cursor: cursor})
		require.NoError(t, err)
		for _, tr := range page {
			if tr.Kind == string(scan.KindFee) {
				fees++
				continue
			}
			k := transferKey{tr.Tx, tr.Kind, tr.Asset}
			require.NotContains(t, out, k, "transfer stored twice")
			out[k] = tr
		}
		if next == "" {
			return out, fees
		}
		cursor = next
	}
}

// checkFound asserts the stored transfers are exactly the expected ones.
func checkFound(t *testing.T, got map[transferKey]store.StoredTransfer, want []testchain.Expected) {
	t.Helper()
	require.Len(t, got, len(want), "exactly the wallet's transfers, none of the unrelated traffic")
	for _, e := range want {
		tr, ok := got[transferKey{e.Tx, string(e.Kind), e.Asset}]
		if !assert.True(t, ok, "missing %s %s", e.Kind, e.Tx) {
			continue
		}
		assert.Equal(t, e.Amount.String(), tr.Amount.String(), e.Tx)
		assert.Equal(t, string(e.Direction), tr.Direction, e.Tx)
		assert.NotEmpty(t, tr.Class, "classified when the wallet finished")
	}
}

func checkReconciled(t *testing.T, w walletStatus, assets int) {
	t.Helper()
	require.Len(t, w.Balances, assets)
	for _, b := range w.Balances {
		require.NotNil(t, b.Reconciled, "%s %s: %s", b.Network, b.Asset, b.Detail)
		assert.True(t, *b.Reconciled, "%s %s: %s", b.Network, b.Asset, b.Detail)
		assert.Equal(t, b.Chain, b.Balance)
	}
	require.NotNil(t, w.Reconciled)
	assert.True(t, *w.Reconciled)
}

// TestBackfillOfAFiveThousandBlockHistory scans one chain twice (building
// it is the slow part): straight through, and with its worker killed midway.
func TestBackfillOfAFiveThousandBlockHistory(t *testing.T) {
	endToEnd(t)
	chain, h := fiveThousandBlocks(t)
	t.Run("FindsExactlyTheWalletsTransfersAndReconciles", func(t *testing.T) { scanStraightThrough(t, chain, h) })
	t.Run("ResumesFromItsCheckpointWhenItsWorkerIsKilled", func(t *testing.T) { scanWithAKill(t, chain, h) })
}

func scanStraightThrough(t *testing.T, chain *devchain.Chain, h *testchain.EVMHistory) {
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	node := startBackfillNode(t, srv, backfillConfig(dir, chain.URL(), ""), st)
	wallet := strings.ToLower(h.Wallet.Hex())

	code, w := addWallet(t, node.APIAddr(), `{"address":"`+h.Wallet.Hex()+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusAccepted, code)
	assert.Equal(t, "PENDING", w.Networks[0].Status)
	w = waitWallet(t, node.APIAddr(), wallet, 2*time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)

	got, fees := storedTransfers(t, st, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	assert.Equal(t, len(h.Sent), fees, "one fee per transaction the wallet sent, the reverted one too")
	checkReconciled(t, w, 2)
	bal, err := testchain.EVMBalance(context.Background(), chain.URL(), h.Wallet, chain.Head())
	require.NoError(t, err)
	assert.Equal(t, bal.String(), w.Balances[0].Balance, "the native balance is the chain's")

	row, err := st.SyncStatus(context.Background(), wallet, scan.Etherlink)
	require.NoError(t, err)
	took := row.FinishedAt.Sub(row.StartedAt).Seconds()
	blocks := row.Target - row.Start + 1
	t.Logf("scanned %d blocks and stored %d transfers (%d native and token, %d fees) in %.2fs: %.0f blocks/s, %.0f transfers/s",
		blocks, row.Transfers, len(got), fees, took, float64(blocks)/took, float64(row.Transfers)/took)
}

// gate is a JSON-RPC proxy that holds requests for blocks at or above from
// until opened, and records the blocks asked for once open.
type gate struct {
	target   string
	from     uint64
	open     chan struct{}
	aborted  chan struct{} // a held request's client went away
	abortOne sync.Once
	mu       sync.Mutex
	after    []uint64 // blocks requested once open
	opened   atomic.Bool
}

func newGate(t *testing.T, target string, from uint64) (*gate, string) {
	g := &gate{target: target, from: from, open: make(chan struct{}), aborted: make(chan struct{})}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	return g, srv.URL
}

func (g *gate) release() {
	if g.opened.CompareAndSwap(false, true) {
		close(g.open)
	}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var batch []struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	var blocks []uint64
	if json.Unmarshal(body, &batch) == nil {
		for _, c := range batch {
			var n hexutil.Uint64
			if c.Method == "eth_getBlockByNumber" && len(c.Params) > 0 && json.Unmarshal(c.Params[0], &n) == nil {
				blocks = append(blocks, uint64(n))
			}
		}
	}
	held := false
	for _, n := range blocks {
		held = held || n >= g.from
	}
	if held && !g.opened.Load() {
		select {
		case <-g.open:
		case <-r.Context().Done():
			g.abortOne.Do(func() { close(g.aborted) })
			return
		}
	}
	if g.opened.Load() {
		g.mu.Lock()
		g.after = append(g.after, blocks...)
		g.mu.Unlock()
	}
	resp, err := http.Post(g.target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	io.Copy(w, resp.Body)
}

func scanWithAKill(t *testing.T, chain *devchain.Chain, h *testchain.EVMHistory) {
	const stallAt = 2600
	g, proxy := newGate(t, chain.URL(), stallAt)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, proxy, "")
	cfg.Backfill.EVMChunkBlocks = 200
	first := startBackfillNode(t, srv, cfg, st)
	wallet := strings.ToLower(h.Wallet.Hex())

	code, _ := addWallet(t, first.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code)
	// The scan stops at the gate; wait until everything before it is stored.
	var row store.SyncStatus
	require.Eventually(t, func() bool {
		var err error
		row, err = st.SyncStatus(context.Background(), wallet, scan.Etherlink)
		return err == nil && row.Checkpoint == stallAt
	}, time.Minute, 20*time.Millisecond)
	before := row.Transfers
	require.Positive(t, before)

	first.Kill()
	select { // the killed worker's scan gives up its held request
	case <-g.aborted:
	case <-time.After(30 * time.Second):
	}
	g.release()
	second := startBackfillNode(t, srv, cfg, st)
	w := waitWallet(t, second.APIAddr(), wallet, 2*time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)

	row, err := st.SyncStatus(context.Background(), wallet, scan.Etherlink)
	require.NoError(t, err)
	assert.Equal(t, 2, row.Attempts, "one attempt per worker")
	g.mu.Lock()
	resumed := append([]uint64(nil), g.after...)
	g.mu.Unlock()
	require.NotEmpty(t, resumed)
	for _, n := range resumed {
		require.GreaterOrEqual(t, n, uint64(stallAt), "the second worker started at the checkpoint, not from the beginning")
	}
	got, fees := storedTransfers(t, st, wallet, scan.Etherlink)
	checkFound(t, got, h.Expected)
	assert.Equal(t, len(h.Sent), fees)
	checkReconciled(t, w, 2)
	bal, err := testchain.EVMBalance(context.Background(), chain.URL(), h.Wallet, chain.Head())
	require.NoError(t, err)
	assert.Equal(t, bal.String(), w.Balances[0].Balance, "the same final balance")
}

func startDevnet(t *testing.T) *devnet.Devnet {
	t.Helper()
	d, err := devnet.Start(t.Context(), devnet.Options{SlotTime: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	return d
}

func TestBackfillOnTheLocalSolanaDevnetFindsTheWalletsSOLTransfersAndReconciles(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 100)
	require.NoError(t, err)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, "", d.URL())
	cfg.Backfill.SolanaChunk = 50
	node := startBackfillNode(t, srv, cfg, st)
	wallet := h.Wallet.PublicKey().String()

	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code)
	w := waitWallet(t, node.APIAddr(), wallet, time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)
	got, fees := storedTransfers(t, st, wallet, scan.Solana)
	checkFound(t, got, h.Expected)
	assert.Equal(t, h.Paid, fees)
	checkReconciled(t, w, 1)
	assert.Equal(t, new(big.Int).SetUint64(d.Balance(h.Wallet.PublicKey())).String(), w.Balances[0].Chain)
}

func TestRPCFailuresRetryUntilAbandonedAndAddingTheWalletAgainCompletesIt(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 5)
	require.NoError(t, err)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	node := startBackfillNode(t, srv, backfillConfig(dir, "", d.URL()), st)
	wallet := h.Wallet.PublicKey().String()

	d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"}) // every call fails until cleared
	code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code)
	w := waitWallet(t, node.APIAddr(), wallet, time.Minute)
	n := w.Networks[0]
	assert.Equal(t, "ABANDONED", n.Status)
	assert.Equal(t, 5, n.RetryCount)
	assert.Equal(t, 6, n.Attempts, "the first attempt and five retries")
	assert.Contains(t, n.LastError, "Internal error")
	assert.Nil(t, w.Reconciled)

	d.ClearFaults()
	code, w = addWallet(t, node.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code, "an abandoned wallet starts again")
	assert.Equal(t, 0, w.Networks[0].RetryCount, "the retry count is reset")
	w = waitWallet(t, node.APIAddr(), wallet, time.Minute)
	assert.Equal(t, "COMPLETED", w.Status, "%+v", w)
	checkReconciled(t, w, 1)
}

func TestConcurrentAddsOfOneWalletRunOneWalletSyncAndOneBackfillPerNetwork(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 3)
	require.NoError(t, err)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	node := startBackfillNode(t, srv, backfillConfig(dir, "", d.URL()), st)
	wallet := h.Wallet.PublicKey().String()

	codes := make(chan int, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, _ := addWallet(t, node.APIAddr(), `{"address":"`+wallet+`","networks":["solana"]}`)
			codes <- code
		}()
	}
	close(start)
	wg.Wait()
	close(codes)
	var got []int
	for c := range codes {
		got = append(got, c)
	}
	assert.ElementsMatch(t, []int{http.StatusAccepted, http.StatusOK}, got, "one add starts the work, the other finds it at work")
	w := waitWallet(t, node.APIAddr(), wallet, time.Minute)
	require.Equal(t, "COMPLETED", w.Status)
	assert.Equal(t, 1, w.Networks[0].Attempts)

	runs := func(id string) int {
		resp, err := node.Client.WorkflowService().ListWorkflowExecutions(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: srv.Namespace(), Query: fmt.Sprintf("WorkflowId = '%s'", id),
		})
		require.NoError(t, err)
		return len(resp.Executions)
	}
	require.Eventually(t, func() bool { return runs(workflows.WalletWorkflowID(wallet)) > 0 }, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, 1, runs(workflows.WalletWorkflowID(wallet)), "one WalletSync")
	assert.Equal(t, 1, runs(workflows.BackfillWorkflowID(scan.Solana, wallet)), "one Backfill for the network")
}

func TestOneBackfillWorkerScansOneWalletAtATimeAndThenTheNext(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	var wallets []string
	for range 3 {
		h, err := testchain.BuildSolanaHistory(context.Background(), d, 3)
		require.NoError(t, err)
		wallets = append(wallets, h.Wallet.PublicKey().String())
	}
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, "", d.URL())
	cfg.Backfill.Workers = 1
	node := startBackfillNode(t, srv, cfg, st)
	for _, w := range wallets {
		code, _ := addWallet(t, node.APIAddr(), `{"address":"`+w+`"}`)
		require.Equal(t, http.StatusAccepted, code)
	}
	var rows []store.SyncStatus
	for _, w := range wallets {
		require.Equal(t, "COMPLETED", waitWallet(t, node.APIAddr(), w, time.Minute).Status)
		row, err := st.SyncStatus(context.Background(), w, scan.Solana)
		require.NoError(t, err)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].StartedAt.Before(rows[j].StartedAt) })
	for i := 1; i < len(rows); i++ {
		assert.False(t, rows[i].StartedAt.Before(rows[i-1].FinishedAt), "with one slot, a scan starts once the previous one is done")
	}
}
