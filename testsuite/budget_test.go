package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/node"
)

// The polling budget (docs/chains.md, Polling budget): what keeper asks each chain's
// endpoint, counted at a JSON-RPC proxy in front of the local chains.

// idleRPCPerMinute is docs/chains.md's figure for an idle keeper: requests a minute
// per chain while no batch awaits finality and nobody asks /readyz.
const idleRPCPerMinute = 0

// TestAnIdleKeeperDevMakesAtMostTheBudgetedRPCRequestsPerChain runs what
// `keeper dev` runs (embedded Temporal server, API, worker, both local
// chains) with keeper dev's settings, lets it settle, and counts every
// request it sends each chain's endpoint while idle: over idleWindow (10 s;
// a full minute with -tags budget, as .ci/run runs it).
func TestAnIdleKeeperDevMakesAtMostTheBudgetedRPCRequestsPerChain(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.AnchorInterval = config.DevAnchorInterval
	cfg.AllowPrivateURLs = true
	require.Equal(t, []string{"etherlink", "solana"}, cfg.Chains, "keeper dev's chains")
	_, evm, sol := startCounted(t, cfg)

	time.Sleep(idleWindow)
	budget := float64(idleRPCPerMinute) * idleWindow.Minutes()
	for chain, c := range map[string]*rpcCounter{"etherlink": evm, "solana": sol} {
		got := c.take()
		t.Logf("%s, idle for %v: %d requests %v", chain, idleWindow, got.requests, got.methods)
		assert.LessOrEqual(t, float64(got.requests), budget, "%s: an idle keeper's requests in %v", chain, idleWindow)
	}
}

// startCounted starts a node as `keeper dev` does (embedded Temporal
// server, API and worker, both local chains on free ports) with cfg, each
// chain reached through a counting proxy, and returns once it runs, its
// start-up requests counted away.
func startCounted(t *testing.T, cfg config.Config) (*node.Node, *rpcCounter, *rpcCounter) {
	t.Helper()
	srv := startServer(t, cfg.DataDir)
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Dev.EVMPort, cfg.Dev.SolanaPort = 0, 0
	net, err := localnet.StartFor(context.Background(), &cfg, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(net.Stop)
	evm, sol := newRPCCounter(t, cfg.EVM.RPCURL), newRPCCounter(t, cfg.Solana.RPCURL)
	cfg.EVM.RPCURL, cfg.Solana.RPCURL = evm.url, sol.url

	n, err := node.Start(context.Background(), node.Options{
		Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: testLogger(t),
		ExtraChains:   map[string]node.ChainMaker{stub.Name: stub.Make},
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
	})
	require.NoError(t, err)
	t.Cleanup(n.Kill)
	t.Logf("at start: etherlink %v, solana %v", evm.take(), sol.take())
	return n, evm, sol
}

// rpcCounter is a JSON-RPC proxy that counts the HTTP requests it passes
// on, and the calls in them by method.
type rpcCounter struct {
	url string
	mu  sync.Mutex
	got rpcCount
}

type rpcCount struct {
	requests int
	methods  map[string]int
}

func newRPCCounter(t *testing.T, upstream string) *rpcCounter {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	c := &rpcCounter{got: rpcCount{methods: map[string]int{}}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		c.count(body)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	c.url = s.URL
	return c
}

func (c *rpcCounter) count(body []byte) {
	type call struct {
		Method string `json:"method"`
	}
	var calls []call
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		_ = json.Unmarshal(b, &calls) // a batch
	} else {
		var one call
		_ = json.Unmarshal(b, &one)
		calls = append(calls, one)
	}
	var names []string
	for _, m := range calls {
		names = append(names, m.Method)
	}
	sort.Strings(names)
	names = compactNames(names)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got.requests++
	c.got.methods[strings.Join(names, "+")]++
}

// take returns the counts so far and starts again from zero.
func (c *rpcCounter) take() rpcCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = rpcCount{methods: map[string]int{}}
	return got
}

func compactNames(s []string) []string {
	var out []string
	for i, n := range s {
		if i == 0 || s[i-1] != n {
			out = append(out, n)
		}
	}
	return out
}
