//go:build !js

package chainread_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
)

const secret = "/v2/SECRET-PATH-KEY?api-key=SECRET-QUERY-KEY"

// rpcServer answers each JSON-RPC request with answer's body (and status,
// 200 when 0), after recording it.
func rpcServer(t *testing.T, answer func(req map[string]any) (int, string)) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		assert.Equal(t, secret, r.URL.RequestURI(), "the endpoint is called at its full URL")
		var req map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		status, body := answer(req)
		if status != 0 {
			w.WriteHeader(status)
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func echoID(req map[string]any, rest string) string {
	id, _ := json.Marshal(req["id"])
	return `{"jsonrpc":"2.0","id":` + string(id) + `,` + rest + `}`
}

func TestHTTPCallsJSONRPCAndReturnsTheRawResult(t *testing.T) {
	srv, seen := rpcServer(t, func(req map[string]any) (int, string) {
		if req["method"] == "eth_getTransactionByHash" {
			return 0, echoID(req, `"result":null`)
		}
		return 0, echoID(req, `"result":{"number":"0x1b4","hash":"0xab"}`)
	})
	c := chainread.HTTP(srv.URL+secret, nil)

	got, err := c.Call(t.Context(), "eth_getBlockByNumber", "0x1b4", false)
	require.NoError(t, err)
	assert.JSONEq(t, `{"number":"0x1b4","hash":"0xab"}`, string(got))
	got, err = c.Call(t.Context(), "eth_getTransactionByHash", "0x01")
	require.NoError(t, err)
	assert.Equal(t, "null", string(got))
	_, err = c.Call(t.Context(), "eth_chainId")
	require.NoError(t, err)

	require.Len(t, *seen, 3)
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "eth_getBlockByNumber", "params": []any{"0x1b4", false}}, (*seen)[0])
	assert.Equal(t, 2.0, (*seen)[1]["id"])
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": 3.0, "method": "eth_chainId", "params": []any{}}, (*seen)[2])
}

func TestHTTPReturnsAnErrorObjectAsRPCError(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
		srv, _ := rpcServer(t, func(req map[string]any) (int, string) {
			return status, echoID(req, `"error":{"code":-32601,"message":"the method eth_foo does not exist","data":"x"}`)
		})
		_, err := chainread.HTTP(srv.URL+secret, nil).Call(t.Context(), "eth_foo")
		var rpcErr *chainread.RPCError
		require.ErrorAs(t, err, &rpcErr, "HTTP %d", status)
		assert.Equal(t, -32601, rpcErr.Code)
		assert.Equal(t, "the method eth_foo does not exist", rpcErr.Message)
		assert.JSONEq(t, `"x"`, string(rpcErr.Data))
	}
}

func TestHTTPErrorsNeverQuoteTheEndpointsPathOrQuery(t *testing.T) {
	for name, answer := range map[string]func(map[string]any) (int, string){
		"an HTTP error": func(map[string]any) (int, string) { return http.StatusTooManyRequests, "slow down" },
		"not JSON":      func(map[string]any) (int, string) { return 0, "<html>" },
		"another id":    func(map[string]any) (int, string) { return 0, `{"jsonrpc":"2.0","id":99,"result":"0x1"}` },
		"no result":     func(req map[string]any) (int, string) { return 0, echoID(req, `"x":1`) },
		"an oversize answer": func(map[string]any) (int, string) {
			return 0, `"` + strings.Repeat("0", chainread.MaxHTTPResponse) + `"`
		},
	} {
		srv, _ := rpcServer(t, answer)
		_, err := chainread.HTTP(srv.URL+secret, nil).Call(t.Context(), "eth_chainId")
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "SECRET", name)
		assert.Contains(t, err.Error(), srv.URL+"/…", name)
	}

	// An endpoint that does not answer, and one whose user info is secret.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	for _, endpoint := range []string{srv.URL + secret, strings.Replace(srv.URL, "://", "://user:SECRET-PASSWORD@", 1) + secret} {
		_, err := chainread.HTTP(endpoint, nil).Call(t.Context(), "eth_chainId")
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "SECRET")
	}

	// A cancelled call still says why.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := chainread.HTTP(srv.URL+secret, nil).Call(ctx, "eth_chainId")
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.NotContains(t, err.Error(), "SECRET")
}
