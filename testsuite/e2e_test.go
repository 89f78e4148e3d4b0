package testsuite

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/receipt"
)

// postMany posts n evidence from 16 concurrent clients with priorities 1–10
// and returns the accepted ids. onProgress, when set, is called after each.
func postMany(t *testing.T, apiAddr, run string, n int, onProgress func(done int)) []string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	ids := make([]string, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				code, id, err := post(hc, apiAddr, map[string]any{"digest": digest(run, i), "chains": []string{"stub"}, "priority": i%10 + 1})
				if err == nil && code != http.StatusAccepted {
					err = fmt.Errorf("evidence %d: HTTP %d", i, code)
				}
				if err != nil {
					errs <- err
					return
				}
				ids[i] = id
				if onProgress != nil {
					onProgress(int(done.Add(1)))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return ids
}

// checkBatches asserts every evidence is in exactly one batch, each batch was
// anchored by exactly one transaction, and returns the number of batches.
func checkBatches(t *testing.T, st *store.Store, chain *stub.Chain, ids []string) int {
	t.Helper()
	leaves := map[int64]map[int]string{}
	for _, id := range ids {
		ev, err := st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		require.Len(t, ev.Anchors, 1)
		a := ev.Anchors[0]
		if leaves[a.BatchID] == nil {
			leaves[a.BatchID] = map[int]string{}
		}
		other, dup := leaves[a.BatchID][a.LeafIndex]
		require.False(t, dup, "evidence %s and %s share leaf %d of batch %d", id, other, a.LeafIndex, a.BatchID)
		leaves[a.BatchID][a.LeafIndex] = id
	}
	for id, ls := range leaves {
		b, err := st.GetBatch(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, b.Size, len(ls), "batch %d", id)
		assert.Equal(t, store.BatchConfirmed, b.State, "batch %d", id)
		assert.Equal(t, 1, chain.Transactions(id), "batch %d must be anchored by exactly one transaction", id)
	}
	return len(leaves)
}

// checkReceipts fetches every receipt over the API and checks its proof.
func checkReceipts(t *testing.T, apiAddr string, ids []string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, id := range ids {
		resp, err := hc.Get("http://" + apiAddr + "/v1/evidence/" + id + "/receipt")
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "receipt of %s: %s", id, raw)
		r, err := receipt.Parse(raw)
		require.NoError(t, err)
		require.Equal(t, id, r.EvidenceID)
		require.Len(t, r.Anchors, 1)
		require.NoError(t, r.CheckProof(r.Anchors[0]), "receipt of %s", id)
	}
}

func TestTwoThousandConcurrentEvidenceAllConfirmInFewBatches(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	st := openStore(t, dir)
	chain, chs := stubChains(cfg)
	nd := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)

	start := time.Now()
	ids := postMany(t, nd.APIAddr(), t.Name(), 2000, nil)
	posted := time.Since(start)
	end := waitConfirmed(t, st, 2000, 3*time.Minute)
	elapsed := end.Sub(start)

	batches := checkBatches(t, st, chain, ids)
	checkReceipts(t, nd.APIAddr(), ids)
	assert.Less(t, batches, 200, "batching must make far fewer batches than evidence")
	t.Logf("2000 evidence: posted in %v, all confirmed after %v (%.0f evidence/s), %d batches", posted.Round(time.Millisecond), elapsed.Round(time.Millisecond), 2000/elapsed.Seconds(), batches)

	// The batches are visible to Temporal's own tools through keeper's search attributes.
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		res, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: srv.Namespace(), Query: "KeeperChain = 'stub' AND KeeperStatus = 'confirmed' AND KeeperBatchSize >= 1",
		})
		return err == nil && res.GetCount() == int64(batches)
	}, 30*time.Second, 200*time.Millisecond, "every batch workflow is found by chain, status and batch size")
}

func TestWorkerKilledMidwayLosesNothing(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	st := openStore(t, dir)
	chain, chs := stubChains(cfg)
	api := startNode(t, srv, cfg, node.Roles{API: true}, st, chs)
	w1 := startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)

	var restarted sync.Once
	ids := postMany(t, api.APIAddr(), t.Name(), 1000, func(done int) {
		if done == 500 {
			restarted.Do(func() {
				w1.Kill()
				go func() {
					time.Sleep(500 * time.Millisecond)
					startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)
				}()
			})
		}
	})
	waitConfirmed(t, st, 1000, 3*time.Minute)
	batches := checkBatches(t, st, chain, ids)
	checkReceipts(t, api.APIAddr(), ids)
	t.Logf("1000 evidence with a worker killed at 500: all confirmed in %d batches", batches)
}

func TestRestartOnSameDataDirectoryCompletesInFlightBatches(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	cfg := testConfig(dir)
	cfg.StubConfirmDelay = 3 * time.Second // keep batches in flight when we stop
	srv := startServer(t, dir)
	nd := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, nil)
	ids := postMany(t, nd.APIAddr(), t.Name(), 300, nil)
	require.Eventually(t, func() bool {
		return countByStatus(t, nd.Store)[store.StatusSubmitted] > 0
	}, time.Minute, 20*time.Millisecond)
	before := countByStatus(t, nd.Store)
	require.Less(t, before[store.StatusConfirmed], 300, "the stop must happen while work is in flight")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, nd.Shutdown(ctx))
	require.NoError(t, srv.Stop())

	cfg.StubConfirmDelay = 300 * time.Millisecond
	srv2 := startServer(t, dir)
	node2 := startNode(t, srv2, cfg, node.Roles{API: true, Worker: true}, nil, nil)
	waitConfirmed(t, node2.Store, 300, 3*time.Minute)
	checkReceipts(t, node2.APIAddr(), ids)
	t.Logf("stopped with %v; after restart all 300 confirmed", before)
}

// A client's connection pool dials ahead of need, so a stopping node can hold
// a connection that never sent a request; net/http counts it busy for 5 s.
func TestShutdownIsCleanWithAnOpenConnectionThatNeverSentARequest(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	nd := startNode(t, srv, testConfig(dir), node.Roles{API: true, Worker: true}, nil, nil)
	conn, err := net.Dial("tcp", nd.APIAddr())
	require.NoError(t, err)
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, nd.Shutdown(ctx))
}

// nopLogger silences the SDK client in tests.
type nopLogger struct{}

func (nopLogger) Debug(string, ...interface{}) {}
func (nopLogger) Info(string, ...interface{})  {}
func (nopLogger) Warn(string, ...interface{})  {}
func (nopLogger) Error(string, ...interface{}) {}

func TestIntakeQueuesWhileTemporalIsDownAndDrainsWhenItIsBack(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	cfg := testConfig(dir)
	st := openStore(t, dir)
	_, chs := stubChains(cfg)

	// Nothing listens on this port yet: the API must still take evidence in.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	api, err := node.Start(context.Background(), node.Options{
		Config: cfg, Roles: node.Roles{API: true}, Store: st, Chains: chs, Logger: testLogger(t),
		ClientOptions: client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", port), Namespace: "default"},
	})
	require.NoError(t, err)
	t.Cleanup(api.Kill)

	ids := postMany(t, api.APIAddr(), t.Name(), 50, nil)
	time.Sleep(300 * time.Millisecond)
	assert.Zero(t, countByStatus(t, st)[store.StatusConfirmed])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir: dir, FrontendPort: port, Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: testLogger(t),
	})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)

	waitConfirmed(t, st, 50, 2*time.Minute)
	checkReceipts(t, api.APIAddr(), ids)
}
