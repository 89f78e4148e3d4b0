package node

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/stub"
)

// An API whose listener breaks under it (here: closed) no longer answers
// anyone: the node fails, naming the listener, so that `keeper api` exits
// non-zero instead of running on without serving.
func TestAnAPIWhoseListenerFailsFailsTheNodeNamingTheListener(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Chains = []string{stub.Name}
	n, err := Start(context.Background(), Options{
		Config: cfg, Roles: Roles{API: true}, Logger: slog.New(slog.DiscardHandler),
		Chains: map[string]chains.Adapter{stub.Name: stub.New(time.Second)},
		// Lazy: the API starts without a Temporal server.
		ClientOptions: client.Options{HostPort: "127.0.0.1:1"},
	})
	require.NoError(t, err)
	t.Cleanup(n.Kill)
	resp, err := http.Get("http://" + n.APIAddr() + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, n.Err(), "a serving node has not failed")

	addr := n.APIAddr()
	require.NoError(t, n.listener.Close())
	select {
	case <-n.Failed():
	case <-time.After(time.Minute):
		t.Fatal("the node did not fail when its API listener did")
	}
	require.Error(t, n.Err())
	assert.Contains(t, n.Err().Error(), "KEEPER_HTTP_ADDR: stopped serving on "+addr)
	require.NoError(t, n.Shutdown(context.Background()))
}

// A node shut down on purpose has not failed: its process exits 0.
func TestANodeShutDownOnPurposeHasNotFailed(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Chains = []string{stub.Name}
	n, err := Start(context.Background(), Options{
		Config: cfg, Roles: Roles{API: true}, Logger: slog.New(slog.DiscardHandler),
		Chains:        map[string]chains.Adapter{stub.Name: stub.New(time.Second)},
		ClientOptions: client.Options{HostPort: "127.0.0.1:1"},
	})
	require.NoError(t, err)
	require.NoError(t, n.Shutdown(context.Background()))
	assert.NoError(t, n.Err())
	select {
	case <-n.Failed():
		t.Fatal("Failed is closed after a shutdown")
	default:
	}
}
