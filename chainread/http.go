//go:build !js

package chainread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/keeperhq/keeper/internal/redact"
)

// MaxHTTPResponse bounds the JSON-RPC answers HTTP reads: a full block of a
// busy chain fits many times over.
const MaxHTTPResponse = 32 << 20

// HTTP is a Caller speaking JSON-RPC 2.0 to endpoint over HTTP POST. hc nil
// means a client with a 30 s timeout. Its errors never quote endpoint,
// whose path, query or user info may hold an API key: they name it as
// redact.Endpoint does (scheme and host).
func HTTP(endpoint string, hc *http.Client) Caller {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &httpCaller{url: endpoint, name: redact.Endpoint(endpoint), hc: hc}
}

type httpCaller struct {
	url  string
	name string // what errors call it
	hc   *http.Client
	id   atomic.Uint64
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

func (h *httpCaller) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	id := h.id.Add(1)
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("POST %s: not a usable endpoint URL", h.name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		// *url.Error quotes the URL; keep only what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("POST %s: %w", h.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPResponse+1))
	if err != nil {
		return nil, fmt.Errorf("POST %s: reading the answer: %w", h.name, err)
	}
	if len(data) > MaxHTTPResponse {
		return nil, fmt.Errorf("POST %s: the answer is larger than %d MiB", h.name, MaxHTTPResponse>>20)
	}
	var r rpcResponse
	jsonErr := json.Unmarshal(data, &r)
	switch {
	case jsonErr == nil && r.Error != nil:
		// Some endpoints answer an error object with a non-2xx status.
		return nil, r.Error
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("POST %s: HTTP %s", h.name, resp.Status)
	case jsonErr != nil:
		return nil, fmt.Errorf("POST %s: the answer is not JSON-RPC: %w", h.name, jsonErr)
	case string(r.ID) != fmt.Sprint(id):
		return nil, fmt.Errorf("POST %s: the answer's id is %s, not %d", h.name, r.ID, id)
	case r.Result == nil:
		return nil, fmt.Errorf("POST %s: the answer has neither result nor error", h.name)
	}
	return r.Result, nil
}
