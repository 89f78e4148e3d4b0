package testsuite

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/dev/testchain"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/workflows"
)

const deployment = "keeper"

// versioned is cfg with its workers polling as build of the test deployment.
func versioned(cfg config.Config, build string) config.Config {
	cfg.Versioning = config.VersioningConfig{Enabled: true, DeploymentName: deployment, BuildID: build}
	return cfg
}

// heldChain is the stub chain with finality held back until release: its
// anchors wait in ConfirmAnchor, so their AnchorBatch runs stay open as long
// as the test needs. It notes every batch submitted.
type heldChain struct {
	*stub.Chain
	released chan struct{}
	once     sync.Once

	mu        sync.Mutex
	submitted map[int64]bool
}

func newHeldChain(cfg config.Config) *heldChain {
	return &heldChain{Chain: stub.New(cfg.StubConfirmDelay), released: make(chan struct{}), submitted: map[int64]bool{}}
}

func (c *heldChain) adapters() map[string]chains.Adapter {
	return map[string]chains.Adapter{stub.Name: c}
}

func (c *heldChain) release() { c.once.Do(func() { close(c.released) }) }

func (c *heldChain) Submit(ctx context.Context, a chains.Anchor, j chains.Journal) (string, error) {
	c.mu.Lock()
	c.submitted[a.BatchID] = true
	c.mu.Unlock()
	return c.Chain.Submit(ctx, a, j)
}

func (c *heldChain) Status(ctx context.Context, batchID int64, j chains.Journal) (chains.Status, error) {
	st, err := c.Chain.Status(ctx, batchID, j)
	select {
	case <-c.released:
	default:
		if st.State == chains.Final {
			st.State = chains.Pending
		}
	}
	return st, err
}

// batches are the ids of the batches submitted so far, in order.
func (c *heldChain) batches() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for id := range c.submitted {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// current is the build the deployment routes new workflows to ("" for none).
func current(t *testing.T, c client.Client) string {
	t.Helper()
	d, err := c.WorkerDeploymentClient().GetHandle(deployment).Describe(context.Background(), client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return ""
	}
	if v := d.Info.RoutingConfig.CurrentVersion; v != nil {
		return v.BuildID
	}
	return ""
}

// promote makes build current, as `temporal worker deployment
// set-current-version` does, once its workers have reached the server.
func promote(t *testing.T, c client.Client, build string) {
	t.Helper()
	var last error
	require.Eventually(t, func() bool {
		_, last = c.WorkerDeploymentClient().GetHandle(deployment).SetCurrentVersion(context.Background(),
			client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
		return last == nil
	}, 2*time.Minute, 250*time.Millisecond, "set %s current", build)
	require.Equal(t, build, current(t, c))
}

// runVersion is the build a workflow's tasks go to and its versioning
// behaviour, as `temporal workflow describe` shows them.
func runVersion(t *testing.T, c client.Client, id string) (string, enums.VersioningBehavior) {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	return vi.GetDeploymentVersion().GetBuildId(), vi.GetBehavior()
}

// taskBuilds lists, in order, the build of the worker that completed each of
// a workflow's tasks.
func taskBuilds(t *testing.T, c client.Client, id string) []string {
	t.Helper()
	var out []string
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			out = append(out, a.GetDeploymentVersion().GetBuildId())
		}
	}
	return out
}

func runStatus(t *testing.T, c client.Client, id string) enums.WorkflowExecutionStatus {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	return d.GetWorkflowExecutionInfo().GetStatus()
}

func TestPinnedAnchorsFinishOnTheirBuildWhileNewAnchorsRunOnThePromotedBuild(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := testConfig(dir)
	cfg.BatchMaxItems = 1 // one AnchorBatch per evidence
	chain := newHeldChain(cfg)
	a := startNode(t, srv, versioned(cfg, "build-a"), node.Roles{API: true, Worker: true}, st, chain.adapters())
	c := a.Client

	// The deployment's first version becomes current without an operator.
	require.Eventually(t, func() bool { return current(t, c) == "build-a" }, 2*time.Minute, 250*time.Millisecond)

	hc := &http.Client{Timeout: 10 * time.Second}
	postStub := func(run string, n int) {
		for i := range n {
			code, _, err := post(hc, a.APIAddr(), map[string]any{"digest": digest(run, i), "chains": []string{stub.Name}})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, code)
		}
	}
	postStub("before", 3)
	require.Eventually(t, func() bool { return len(chain.batches()) == 3 }, time.Minute, 50*time.Millisecond)
	old := chain.batches()
	for _, id := range old {
		build, behavior := runVersion(t, c, workflows.WorkflowID(stub.Name, id))
		require.Equal(t, "build-a", build)
		require.Equal(t, enums.VERSIONING_BEHAVIOR_PINNED, behavior)
	}

	// Build B rolls out and is promoted while A's anchors wait for finality.
	startNode(t, srv, versioned(cfg, "build-b"), node.Roles{Worker: true}, st, chain.adapters())
	promote(t, c, "build-b")
	postStub("after", 2)
	require.Eventually(t, func() bool { return len(chain.batches()) == 5 }, time.Minute, 50*time.Millisecond)
	fresh := chain.batches()[3:]

	chain.release()
	waitConfirmed(t, st, 5, 2*time.Minute)
	for _, id := range old {
		ranOn(t, c, workflows.WorkflowID(stub.Name, id), "build-a") // the tasks after B's promotion too
	}
	for _, id := range fresh {
		ranOn(t, c, workflows.WorkflowID(stub.Name, id), "build-b")
	}
}

// ranOn waits for a pinned workflow to complete and checks it ran on build:
// its versioning info and every one of its workflow tasks.
func ranOn(t *testing.T, c client.Client, wf, build string) {
	t.Helper()
	require.Eventually(t, func() bool { return runStatus(t, c, wf) == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED }, time.Minute, 50*time.Millisecond)
	got, behavior := runVersion(t, c, wf)
	assert.Equal(t, build, got, wf)
	assert.Equal(t, enums.VERSIONING_BEHAVIOR_PINNED, behavior, wf)
	builds := taskBuilds(t, c, wf)
	require.NotEmpty(t, builds)
	for _, b := range builds {
		assert.Equal(t, build, b, "%s: every workflow task ran on %s", wf, build)
	}
}

func TestAWalletBackfillWaitingToRetryMovesToThePromotedBuild(t *testing.T) {
	endToEnd(t)
	d := startDevnet(t)
	h, err := testchain.BuildSolanaHistory(context.Background(), d, 5)
	require.NoError(t, err)
	dir := tempDir(t)
	srv := startServer(t, dir)
	st := openStore(t, dir)
	cfg := backfillConfig(dir, "", d.URL())
	cfg.Backfill.MaxRetries = 1000 // retries until the fault is cleared
	cfg.Backfill.RetryBase, cfg.Backfill.RetryCap = 200*time.Millisecond, 200*time.Millisecond
	_, chs := stubChains(cfg)
	a := startNode(t, srv, versioned(cfg, "build-a"), node.Roles{API: true, Worker: true}, st, chs)
	c := a.Client
	require.Eventually(t, func() bool { return current(t, c) == "build-a" }, 2*time.Minute, 250*time.Millisecond)

	// The wallet's scan fails on build A and waits on a retry timer.
	d.InjectFault(devnet.RPCFault{Method: "getSignaturesForAddress"})
	wallet := h.Wallet.PublicKey().String()
	code, _ := addWallet(t, a.APIAddr(), `{"address":"`+wallet+`"}`)
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool {
		row, err := st.SyncStatus(context.Background(), wallet, scan.Solana)
		return err == nil && row.RetryCount >= 1
	}, time.Minute, 50*time.Millisecond)
	walletSync, fill := workflows.WalletWorkflowID(wallet), workflows.BackfillWorkflowID(scan.Solana, wallet)
	build, behavior := runVersion(t, c, fill)
	require.Equal(t, "build-a", build)
	require.Equal(t, enums.VERSIONING_BEHAVIOR_AUTO_UPGRADE, behavior)

	startNode(t, srv, versioned(cfg, "build-b"), node.Roles{Worker: true}, st, chs)
	promote(t, c, "build-b")
	// Its next retry runs on build B; then the fault clears and it completes there.
	require.Eventually(t, func() bool { build, _ := runVersion(t, c, fill); return build == "build-b" }, time.Minute, 50*time.Millisecond)
	d.ClearFaults()
	w := waitWallet(t, a.APIAddr(), wallet, 2*time.Minute)
	require.Equal(t, "COMPLETED", w.Status, "%+v", w)

	builds := taskBuilds(t, c, fill)
	require.NotEmpty(t, builds)
	assert.Equal(t, "build-a", builds[0], "the backfill started on build A")
	assert.Equal(t, "build-b", builds[len(builds)-1], "and finished on build B")
	require.Eventually(t, func() bool { return runStatus(t, c, walletSync) == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED }, time.Minute, 50*time.Millisecond)
	build, behavior = runVersion(t, c, walletSync)
	assert.Equal(t, "build-b", build, "WalletSync moved to build B too")
	assert.Equal(t, enums.VERSIONING_BEHAVIOR_AUTO_UPGRADE, behavior)
}
