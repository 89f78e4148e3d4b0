// Package testsuite holds keeper's tests that need a real Temporal server:
// end-to-end runs on the embedded server and replay of recorded histories.
package testsuite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/worker"
)

// testConfig is keeper's default configuration with timings cut down so a
// run takes seconds: the behaviour is the same, only faster.
func testConfig(dataDir string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dataDir
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.HealthAddr = "127.0.0.1:0" // a worker-only node's /health and /readyz
	cfg.Chains = []string{"stub"}
	cfg.StubConfirmDelay = 300 * time.Millisecond
	cfg.ConfirmPoll = 50 * time.Millisecond
	cfg.PollInterval = 500 * time.Millisecond
	cfg.AnchorInterval = config.DevAnchorInterval // keeper dev's cadence: about a local block
	cfg.RetryBase = 100 * time.Millisecond
	cfg.RetryCap = time.Second
	cfg.RetryJitter = 50 * time.Millisecond
	cfg.SubmitTimeout = 5 * time.Second
	cfg.DrainTimeout = 2 * time.Second
	cfg.AllowPrivateURLs = true // as keeper dev: usage sources on 127.0.0.1
	return cfg
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("KEEPER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer starts an embedded Temporal server on dataDir and stops it
// when the test ends.
func startServer(t testing.TB, dataDir string) *devserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir: dataDir, Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: testLogger(t),
	})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	return srv
}

// startNode starts a keeper node against srv.
func startNode(t testing.TB, srv *devserver.Server, cfg config.Config, roles node.Roles, st *store.Store, ch map[string]chains.Adapter) *node.Node {
	t.Helper()
	n, err := node.Start(context.Background(), node.Options{
		Config: cfg, Roles: roles, Store: st, Chains: ch, Logger: testLogger(t),
		ExtraChains:   map[string]node.ChainMaker{stub.Name: stub.Make}, // as the keeper binary
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
	})
	require.NoError(t, err)
	t.Cleanup(func() { n.Kill() })
	return n
}

func openStore(t testing.TB, dataDir string) *store.Store {
	t.Helper()
	st := storetest.Open(t, node.StoreFile(dataDir))
	return st
}

func stubChains(cfg config.Config) (*stub.Chain, map[string]chains.Adapter) {
	c := stub.New(cfg.StubConfirmDelay)
	return c, map[string]chains.Adapter{stub.Name: c}
}

// digest makes a distinct evidence digest per (run, i).
func digest(run string, i int) string {
	d := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", run, i)))
	return fmt.Sprintf("%x", d)
}

type postAnswer struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// post submits one evidence and returns the HTTP status and id.
func post(hc *http.Client, apiAddr string, body map[string]any) (int, string, error) {
	b, _ := json.Marshal(body)
	resp, err := hc.Post("http://"+apiAddr+"/v1/evidence", "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var a postAnswer
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &a); err != nil {
		return resp.StatusCode, "", fmt.Errorf("answer %q: %w", raw, err)
	}
	return resp.StatusCode, a.ID, nil
}

// countByStatus reads every evidence's status from the store.
func countByStatus(t testing.TB, st *store.Store) map[store.Status]int {
	t.Helper()
	out := map[store.Status]int{}
	cursor := ""
	for {
		evs, next, err := st.ListEvidence(context.Background(), store.ListFilter{Limit: 1000, Cursor: cursor})
		require.NoError(t, err)
		for _, ev := range evs {
			out[ev.Status]++
		}
		if next == "" {
			return out
		}
		cursor = next
	}
}

// waitConfirmed waits until want evidence are confirmed and returns when
// that happened.
func waitConfirmed(t testing.TB, st *store.Store, want int, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		c := countByStatus(t, st)
		if c[store.StatusConfirmed] == want {
			return time.Now()
		}
		require.Zero(t, c[store.StatusDeadLetter], "nothing may be dead-lettered: %v", c)
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for confirmations", "statuses: %v", c)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort is a TCP port free on 127.0.0.1 at the time of the call (the
// crash suites call it by this name).
func freePort(t testing.TB) int { return testkit.FreePort(t) }

func tempDir(t testing.TB) string {
	d := t.TempDir()
	return filepath.Join(d, "data")
}
