package testsuite

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/node"
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
