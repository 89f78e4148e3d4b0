package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
)

// TestAWorkerWhoseNamespaceIsDeletedAnswersNotReadyThenExitsNonZero runs
// `keeper worker` as a process against the embedded Temporal server and
// deletes its namespace under it: its Temporal workers stop polling for
// good (after the 2 minutes the Temporal SDK retries such an answer), /readyz
// answers 503 naming the cause, and then the process exits 1
// with that cause on its last line, so that a supervisor sees it unready
// and starts it again (docs/production.md, Restarts).
func TestAWorkerWhoseNamespaceIsDeletedAnswersNotReadyThenExitsNonZero(t *testing.T) {
	endToEnd(t)
	// Two of its three minutes are the SDK's wait (a constant of the SDK's):
	// it runs beside the other waiting tests.
	t.Parallel()
	bin := keeperBinary(t)
	work := t.TempDir()
	dir := filepath.Join(work, "data")
	srv := startServer(t, dir)
	health := fmt.Sprintf("127.0.0.1:%d", freePort(t))

	wrk := &proc{name: "worker", args: []string{"worker"}, log: procLog(t, work, "worker"), env: []string{
		"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "TEMPORAL_NAMESPACE=" + srv.Namespace(),
		"TEMPORAL_CONFIG_FILE=" + filepath.Join(work, "no-temporal.toml"),
		"KEEPER_DATA_DIR=" + dir, "KEEPER_CHAINS=stub", "KEEPER_HEALTH_ADDR=" + health,
		"KEEPER_LOG_LEVEL=warn", "KEEPER_DRAIN_TIMEOUT=1s",
	}}
	killAtCleanup(t, wrk)
	wrk.start(t, bin)
	exited := make(chan error, 1)
	go func() { exited <- wrk.cmd.Wait() }()

	require.Eventually(t, func() bool {
		code, _, err := probeReadyz(health)
		return err == nil && code == http.StatusOK
	}, 2*time.Minute, 100*time.Millisecond, "the worker becomes ready")

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.OperatorService().DeleteNamespace(ctx, &operatorservice.DeleteNamespaceRequest{Namespace: srv.Namespace()})
	require.NoError(t, err)

	// Not ready, while the process still runs, and saying why.
	var checks map[string]string
	require.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true // asserted below: it must not have exited yet
		default:
		}
		code, c, err := probeReadyz(health)
		checks = c
		return err == nil && code == http.StatusServiceUnavailable && checks["worker"] != "ok"
	}, 5*time.Minute, 100*time.Millisecond, "/readyz answers 503 once the namespace is gone (the SDK retries the answer for 2 minutes first)")
	select {
	case err := <-exited:
		require.Failf(t, "the worker exited before /readyz answered 503", "%v", err)
	default:
	}
	assert.Contains(t, checks["worker"], "stopped polling for good", "%v", checks)
	assert.Contains(t, checks["worker"], srv.Namespace(), "the cause names the namespace: %v", checks)

	var waitErr error
	select {
	case waitErr = <-exited:
	case <-time.After(2 * time.Minute):
		require.FailNow(t, "the worker did not exit after its namespace was deleted")
	}
	var exit *exec.ExitError
	require.True(t, errors.As(waitErr, &exit), "the worker exits with a status: %v", waitErr)
	assert.Equal(t, 1, exit.ExitCode())
	out, err := os.ReadFile(wrk.log.Name())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "keeper: the Temporal worker stopped polling for good: "), "the last line says why: %q", last)
	assert.Contains(t, last, srv.Namespace())
}

// probeReadyz asks addr's /readyz; an error when nothing answers.
func probeReadyz(addr string) (int, map[string]string, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, nil, err
	}
	if err := json.Unmarshal(buf.Bytes(), &body); err != nil {
		return 0, nil, fmt.Errorf("readyz %q: %w", buf.String(), err)
	}
	return resp.StatusCode, body.Checks, nil
}
