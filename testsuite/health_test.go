package testsuite

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
)

// TestAWorkerIsReadyOnItsOwnAddressWhileItPollsItsTaskQueuesAndNotOnceTemporalIsGone
// starts the wiring of `keeper worker` (a node without the API) on the
// embedded Temporal server: it serves /health, /readyz and /metrics on its
// health address, ready while its workers poll and the server, the store
// and its chains answer.
func TestAWorkerIsReadyOnItsOwnAddressWhileItPollsItsTaskQueuesAndNotOnceTemporalIsGone(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	st := openStore(t, dir)
	_, chs := stubChains(cfg)
	w := startNode(t, srv, cfg, node.Roles{Worker: true}, st, chs)
	require.Empty(t, w.APIAddr(), "a worker has no API")
	require.NotEmpty(t, w.HealthAddr())

	ready, checks := readyz(t, w.HealthAddr())
	assert.True(t, ready, "%v", checks)
	assert.Equal(t, map[string]string{"store": "ok", "temporal": "ok", "worker": "ok", "log": "ok", "chain:stub": "ok"}, checks)
	for _, path := range []string{"/health", "/metrics"} {
		resp, err := http.Get("http://" + w.HealthAddr() + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		if path == "/metrics" {
			assert.Contains(t, string(body), "keeper_anchor_", "the worker's own metrics")
		}
	}

	require.NoError(t, srv.Stop())
	require.Eventually(t, func() bool {
		ready, checks = readyz(t, w.HealthAddr())
		return !ready
	}, 30*time.Second, 100*time.Millisecond, "Temporal gone: not ready")
	assert.NotEqual(t, "ok", checks["temporal"])
	assert.Equal(t, "ok", checks["store"])
}

func TestKeeperDevsReadinessCountsItsWorkersAndServesNoSecondAddress(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	_, chs := stubChains(cfg)
	n := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	assert.Empty(t, n.HealthAddr(), "the API's address serves /health and /readyz")
	ready, checks := readyz(t, n.APIAddr())
	assert.True(t, ready, "%v", checks)
	assert.Equal(t, "ok", checks["worker"], "the workers poll their task queues")
}

// TestAWorkerOnALostStoreIsNotReadyAndSignsNothingWhileAChainHoldsALaterCheckpoint:
// a worker started with the deployment's log key on a store that lost the
// log (here a new one) reads the checkpoint the chain holds, signs nothing
// and answers /readyz with the log check failing and saying what to do; the
// worker on the store the checkpoint came from stays ready.
func TestAWorkerOnALostStoreIsNotReadyAndSignsNothingWhileAChainHoldsALaterCheckpoint(t *testing.T) {
	endToEnd(t)
	srv, cfg, chs, dir := startLocalChains(t, func(c *config.Config) { c.Chains = []string{"etherlink"} })
	st := openStore(t, dir)
	n := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)
	hc := &http.Client{Timeout: 10 * time.Second}
	for i := range 5 {
		code, _, err := post(hc, n.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": []string{"etherlink"}})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
	}
	waitConfirmed(t, st, 5, 2*time.Minute)
	ready, checks := readyz(t, n.APIAddr())
	require.True(t, ready, "%v", checks)

	lost := openStore(t, tempDir(t))
	w := startNode(t, srv, cfg, node.Roles{Worker: true}, lost, chs)
	ready, checks = readyz(t, w.HealthAddr())
	assert.False(t, ready)
	assert.Contains(t, checks["log"], "a chain holds a checkpoint of 5 entries and this store's log has 0")
	assert.Contains(t, checks["log"], "restore the newest one")
	_, err := lost.LatestCheckpoint(context.Background())
	assert.ErrorIs(t, err, store.ErrNotFound, "the lost store's log signed nothing")

	ready, checks = readyz(t, n.APIAddr())
	assert.True(t, ready, "%v", checks)
}
