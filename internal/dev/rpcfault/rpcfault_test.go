package rpcfault_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/rpcfault"
)

// node is a real JSON-RPC server (go-ethereum's) that counts its calls.
type node struct{ calls atomic.Int64 }

func (n *node) Echo(s string) string { n.calls.Add(1); return s }

func start(t *testing.T) (*node, *rpcfault.Proxy, *rpc.Client) {
	t.Helper()
	n := &node{}
	srv := rpc.NewServer()
	require.NoError(t, srv.RegisterName("test", n))
	up := httptest.NewServer(srv)
	t.Cleanup(up.Close)
	t.Cleanup(srv.Stop)
	p, err := rpcfault.Start(up.URL, 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	c, err := rpc.Dial(p.URL())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return n, p, c
}

func TestTheProxyForwardsCallsAndBatchesUnchanged(t *testing.T) {
	n, p, c := start(t)
	var got string
	require.NoError(t, c.Call(&got, "test_echo", "hello"))
	assert.Equal(t, "hello", got)

	var a, b string
	batch := []rpc.BatchElem{{Method: "test_echo", Args: []any{"a"}, Result: &a}, {Method: "test_echo", Args: []any{"b"}, Result: &b}}
	require.NoError(t, c.BatchCall(batch))
	assert.NoError(t, batch[0].Error)
	assert.NoError(t, batch[1].Error)
	assert.Equal(t, "a", a)
	assert.Equal(t, "b", b)
	assert.Equal(t, int64(3), n.calls.Load())
	assert.Equal(t, rpcfault.Stats{Requests: 2, Forwarded: 2}, p.Stats())
}

func TestAnErrorFaultAnswersEveryCallWithAJSONRPCErrorWithoutReachingTheNode(t *testing.T) {
	n, p, c := start(t)
	p.SetFaults(rpcfault.Faults{ErrorRate: 1})

	var got string
	err := c.Call(&got, "test_echo", "hello")
	var rpcErr rpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, -32603, rpcErr.ErrorCode())

	batch := []rpc.BatchElem{{Method: "test_echo", Args: []any{"a"}, Result: new(string)}, {Method: "test_echo", Args: []any{"b"}, Result: new(string)}}
	require.NoError(t, c.BatchCall(batch))
	for _, e := range batch {
		require.ErrorAs(t, e.Error, &rpcErr)
		assert.Equal(t, -32603, rpcErr.ErrorCode())
	}
	assert.Zero(t, n.calls.Load(), "an error fault never reaches the node")
	assert.Equal(t, int64(2), p.Stats().Errors)
}

func TestAnHTTPStatusFaultAnswersTheWholeRequestWithIt(t *testing.T) {
	_, p, c := start(t)
	p.SetFaults(rpcfault.Faults{ErrorRate: 1, HTTPStatus: http.StatusServiceUnavailable})
	err := c.Call(new(string), "test_echo", "hello")
	var httpErr rpc.HTTPError
	require.ErrorAs(t, err, &httpErr)
	assert.Equal(t, http.StatusServiceUnavailable, httpErr.StatusCode)
}

func TestATimeoutFaultReachesTheNodeButTheAnswerNeverComes(t *testing.T) {
	n, p, c := start(t)
	p.SetFaults(rpcfault.Faults{TimeoutRate: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.CallContext(ctx, new(string), "test_echo", "hello")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(1), n.calls.Load(), "the call took effect on the node")
	assert.Equal(t, int64(1), p.Stats().Timeouts)

	p.SetFaults(rpcfault.Faults{})
	var got string
	require.NoError(t, c.Call(&got, "test_echo", "again"))
	assert.Equal(t, "again", got)
}

func TestRatesFailTheirShareOfRequests(t *testing.T) {
	_, p, c := start(t)
	p.SetFaults(rpcfault.Faults{ErrorRate: 0.3})
	failed := 0
	const n = 400
	for range n {
		if err := c.Call(new(string), "test_echo", "x"); err != nil {
			failed++
		}
	}
	assert.InDelta(t, 0.3, float64(failed)/n, 0.08)
	assert.Equal(t, int64(failed), p.Stats().Errors)
}

func TestDownRefusesConnectionsUntilUpServesTheSameURLAgain(t *testing.T) {
	_, p, c := start(t)
	url := p.URL()
	require.NoError(t, c.Call(new(string), "test_echo", "before"))

	require.NoError(t, p.Down())
	// A new connection (not one the client pooled before) is refused.
	fresh := &http.Client{Transport: &http.Transport{}}
	_, err := fresh.Post(url, "application/json", nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, "connection refused")
	assert.Error(t, c.Call(new(string), "test_echo", "while down"))

	require.NoError(t, p.Up())
	assert.Equal(t, url, p.URL())
	var got string
	require.NoError(t, c.Call(&got, "test_echo", "after"))
	assert.Equal(t, "after", got)
}

func TestARateLimitAnswers429WithRetryAfterBeyondItsBudget(t *testing.T) {
	n, p, _ := start(t)
	p.SetFaults(rpcfault.Faults{PerSecond: 3})
	var codes []int
	for range 5 {
		resp, err := http.Post(p.URL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["x"]}`))
		require.NoError(t, err)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		}
		resp.Body.Close()
	}
	assert.Equal(t, []int{200, 200, 200, 429, 429}, codes)
	assert.EqualValues(t, 3, n.calls.Load(), "a refused request never reaches the node")
	assert.EqualValues(t, 2, p.Stats().Throttled)
}
