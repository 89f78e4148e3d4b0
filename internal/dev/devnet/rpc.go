package devnet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/gagliardetto/solana-go"
)

const (
	maxRequestBody = 50 << 20
	coreVersion    = "2.1.21"
	featureSet     = 1725507508
)

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

var nullID = json.RawMessage("null")

type handlerFunc func(d *Devnet, params []json.RawMessage) (any, *rpcError)

// call is one request of an HTTP body, parsed, with its fault decided.
type call struct {
	req    rpcRequest
	notify bool // no id: answer nothing
	early  *rpcError
	fault  *RPCFault
}

// ServeHTTP answers JSON-RPC 2.0 over HTTP POST, single or batch.
//
// Any origin may call it (CORS), as a public RPC node allows, so the /verify
// page can ask it from the browser, served by keeper or opened from a file.
func (d *Devnet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			http.Error(w, "Supplied content type is not allowed. Content-Type: application/json is required", http.StatusUnsupportedMediaType)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body = bytes.TrimSpace(body)

	calls, batch, rerr := parseCalls(body)
	if rerr != nil {
		writeJSON(w, rpcResponse{JSONRPC: "2.0", Error: rerr, ID: nullID})
		return
	}

	// Count calls and decide faults before serving anything.
	delay, httpStatus := d.takeFaults(calls)
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-d.done:
		}
	}
	if httpStatus != 0 {
		http.Error(w, fmt.Sprintf("%d %s", httpStatus, http.StatusText(httpStatus)), httpStatus)
		return
	}

	var out []rpcResponse
	for _, c := range calls {
		resp := d.serve(c)
		if !c.notify {
			out = append(out, resp)
		}
	}
	switch {
	case len(out) == 0:
		w.WriteHeader(http.StatusOK)
	case batch:
		writeJSON(w, out)
	default:
		writeJSON(w, out[0])
	}
}

// parseCalls reads a request body: one call, or a batch of them. A body
// that is not JSON, or an empty batch, is answered with rerr alone.
func parseCalls(body []byte) (calls []*call, batch bool, rerr *rpcError) {
	if len(body) == 0 || body[0] != '[' {
		if !json.Valid(body) {
			return nil, false, &rpcError{Code: codeParseError, Message: "Parse error"}
		}
		return []*call{parseCall(body)}, false, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, false, &rpcError{Code: codeParseError, Message: "Parse error"}
	}
	if len(raws) == 0 {
		return nil, false, &rpcError{Code: codeInvalidRequest, Message: "Invalid request"}
	}
	for _, raw := range raws {
		calls = append(calls, parseCall(raw))
	}
	return calls, true, nil
}

// takeFaults decides each valid call's fault: the request waits for the
// longest delay among them, and fails whole with the first HTTP status.
func (d *Devnet) takeFaults(calls []*call) (delay time.Duration, httpStatus int) {
	for _, c := range calls {
		if c.early != nil {
			continue
		}
		c.fault = d.takeFault(c.req.Method)
		if c.fault == nil {
			continue
		}
		delay = max(delay, c.fault.Delay)
		if c.fault.HTTPStatus != 0 && httpStatus == 0 {
			httpStatus = c.fault.HTTPStatus
		}
	}
	return delay, httpStatus
}

func parseCall(raw json.RawMessage) *call {
	c := &call{}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		c.early = &rpcError{Code: codeInvalidRequest, Message: "Invalid request"}
		return c
	}
	if err := json.Unmarshal(raw, &c.req); err != nil || c.req.Method == "" || c.req.JSONRPC != "2.0" {
		c.early = &rpcError{Code: codeInvalidRequest, Message: "Invalid request"}
	}
	if _, ok := probe["id"]; !ok && c.early == nil {
		c.notify = true
	}
	return c
}

func (d *Devnet) serve(c *call) rpcResponse {
	id := c.req.ID
	if len(id) == 0 {
		id = nullID
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: id}
	if c.early != nil {
		resp.Error = c.early
		return resp
	}
	if f := c.fault; f != nil && f.HTTPStatus == 0 && f.Code != 0 {
		resp.Error = &rpcError{Code: f.Code, Message: f.Message}
		return resp
	}
	h, ok := methods[c.req.Method]
	if !ok {
		resp.Error = &rpcError{Code: codeMethodNotFound, Message: "Method not found"}
		return resp
	}
	var params []json.RawMessage
	if p := bytes.TrimSpace(c.req.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		if p[0] != '[' {
			resp.Error = invalidParams("Invalid params: invalid type: map, expected a sequence.")
			return resp
		}
		if err := json.Unmarshal(p, &params); err != nil {
			resp.Error = invalidParams("Invalid params: %v.", err)
			return resp
		}
	}
	d.mu.Lock()
	result, rerr := h(d, params)
	d.mu.Unlock()
	if rerr != nil {
		resp.Error = rerr
		return resp
	}
	buf, err := json.Marshal(result)
	if err != nil {
		resp.Error = &rpcError{Code: codeInternalError, Message: "Internal error"}
		return resp
	}
	resp.Result = buf
	return resp
}

func writeJSON(w http.ResponseWriter, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(buf)
}

// --- parameter helpers ---

// param returns positional parameter i, or nil when absent or null.
func param(params []json.RawMessage, i int) json.RawMessage {
	if i >= len(params) {
		return nil
	}
	p := bytes.TrimSpace(params[i])
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil
	}
	return p
}

// required decodes a mandatory positional parameter.
func required(params []json.RawMessage, i int, what string, out any) *rpcError {
	p := param(params, i)
	if p == nil {
		return invalidParams("Invalid params: invalid length %d, expected %s.", len(params), what)
	}
	if err := json.Unmarshal(p, out); err != nil {
		return invalidParams("Invalid params: %v.", err)
	}
	return nil
}

// optional decodes an optional config object.
func optional(params []json.RawMessage, i int, out any) *rpcError {
	p := param(params, i)
	if p == nil {
		return nil
	}
	if err := json.Unmarshal(p, out); err != nil {
		return invalidParams("Invalid params: %v.", err)
	}
	return nil
}

func parsePubkey(s string) (solana.PublicKey, *rpcError) {
	pk, err := solana.PublicKeyFromBase58(s)
	if err != nil {
		return pk, invalidParams("Invalid param: Invalid")
	}
	return pk, nil
}

func parseSignature(s string) (solana.Signature, *rpcError) {
	sig, err := solana.SignatureFromBase58(s)
	if err != nil {
		return sig, invalidParams("Invalid param: Invalid")
	}
	return sig, nil
}

func parseCommitment(s string) (commitment, *rpcError) {
	switch s {
	case "", "finalized":
		return finalized, nil
	case "confirmed":
		return confirmed, nil
	case "processed":
		return processed, nil
	}
	return 0, invalidParams("Invalid params: unknown variant `%s`, expected one of `processed`, `confirmed`, `finalized`.", s)
}

// commitmentConfig is the part of a config object that selects the bank.
type commitmentConfig struct {
	Commitment     string  `json:"commitment"`
	MinContextSlot *uint64 `json:"minContextSlot"`
}

// bank picks the bank a read is answered from.
func (d *Devnet) bank(cc commitmentConfig) (*block, *rpcError) {
	c, err := parseCommitment(cc.Commitment)
	if err != nil {
		return nil, err
	}
	return d.bankAt(c, cc.MinContextSlot)
}

func (d *Devnet) bankAt(c commitment, minContextSlot *uint64) (*block, *rpcError) {
	b := d.l.bank(c)
	if minContextSlot != nil && b.slot < *minContextSlot {
		return nil, &rpcError{Code: codeMinContextSlotNotReached, Message: msgMinContextSlotNotReached,
			Data: map[string]uint64{"contextSlot": b.slot}}
	}
	return b, nil
}

type rpcContext struct {
	APIVersion string `json:"apiVersion"`
	Slot       uint64 `json:"slot"`
}

type withContext struct {
	Context rpcContext `json:"context"`
	Value   any        `json:"value"`
}

func wrap(b *block, v any) withContext {
	return withContext{Context: rpcContext{APIVersion: coreVersion, Slot: b.slot}, Value: v}
}
