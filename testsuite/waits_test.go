//go:build scale

package testsuite

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
)

// Waiting for finality holds no activity slot: one worker with the default
// 64 slots keeps 5,000 batches awaiting finality at once (a chain whose
// finality stalls), and every one confirms, exactly once, when it resumes.
func TestFiveThousandBatchesAwaitFinalityOnOneWorker(t *testing.T) {
	const n = 5000
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	def := config.Default()
	cfg.ActivityWorkers, cfg.ConfirmPoll = def.ActivityWorkers, def.ConfirmPoll // a worker as shipped
	cfg.BatchMaxItems = 1                                                       // one batch, workflow and transaction per evidence
	cfg.MaxPending = 2 * n
	st := openStore(t, dir)
	chain, chs := stubChains(cfg)
	chain.HoldFinality(true)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)

	start := time.Now()
	ids := postMany(t, node.APIAddr(), t.Name(), n, nil)
	require.Eventually(t, func() bool {
		return scrapeMetric(t, node.APIAddr(), "keeper_anchor_finality_waits", "stub") == n
	}, 10*time.Minute, time.Second, "every batch submitted and awaiting finality at once")
	waiting := time.Now()
	statuses := countByStatus(t, st)
	assert.Equal(t, n, statuses[store.StatusSubmitted], "all %d evidence submitted and none final yet: %v", n, statuses)
	_, broadcasts := chain.Counts()
	assert.Equal(t, n, broadcasts, "one transaction per batch")

	chain.HoldFinality(false)
	released := time.Now()
	waitConfirmed(t, st, n, 10*time.Minute)
	assert.Equal(t, n, checkBatches(t, st, chain, ids), "one batch per evidence, each anchored by exactly one transaction")
	assert.Zero(t, scrapeMetric(t, node.APIAddr(), "keeper_anchor_finality_waits", "stub"), "no wait left behind")
	t.Logf("%d batches: all awaiting finality %v after the first post, all confirmed %v after finality resumed",
		n, waiting.Sub(start).Round(time.Second), time.Since(released).Round(time.Second))
}
