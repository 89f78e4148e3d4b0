package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// NotRecorded is the JSON-RPC error code Serve answers a call the vector
// does not list with ("method not found").
const NotRecorded = -32601

// maxRequest bounds a request body; verifiers send a few small calls.
const maxRequest = 1 << 20

// Serve starts one JSON-RPC server on 127.0.0.1 (stopped when the test
// ends) that answers each of v's endpoints at the path "/<name>": JSON-RPC
// 2.0 over POST, single and batch requests. A call is answered by the
// recorded call of the same method whose first parameter is the same JSON,
// once compacted (later parameters, such as a Solana config object, are
// not compared); any other call gets error NotRecorded, "not recorded:
// <method> <first param>". It returns, per chain, the endpoints' URLs in
// the vector's order. The server answers CORS preflights, so a browser page
// can ask it.
func Serve(t testing.TB, v Vector) map[string][]string {
	t.Helper()
	srv := httptest.NewServer(replay{answers: recorded(v.Answers)})
	t.Cleanup(srv.Close)
	out := make(map[string][]string, len(v.Endpoints))
	for chain, names := range v.Endpoints {
		for _, name := range names {
			out[chain] = append(out[chain], srv.URL+"/"+name)
		}
	}
	return out
}

// key is what a call is matched by.
type key struct{ method, first string }

// replay answers recorded calls, by endpoint name.
type replay struct{ answers map[string]map[key]Call }

func recorded(answers map[string][]Call) map[string]map[key]Call {
	out := make(map[string]map[key]Call, len(answers))
	for name, calls := range answers {
		byKey := make(map[key]Call, len(calls))
		for _, c := range calls {
			k := key{c.Method, firstParam(c.Params)}
			if _, dup := byKey[k]; !dup { // the first recorded wins
				byKey[k] = c
			}
		}
		out[name] = byKey
	}
	return out
}

// firstParam is the first parameter as compact JSON ("" when none).
func firstParam(params []json.RawMessage) string {
	if len(params) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, params[0]); err != nil {
		return string(params[0])
	}
	return b.String()
}

func (r replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Headers", "*")
	w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	if req.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	calls, ok := r.answers[strings.TrimPrefix(req.URL.Path, "/")]
	if !ok {
		http.Error(w, fmt.Sprintf("no endpoint %q in this vector", req.URL.Path), http.StatusNotFound)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "JSON-RPC is POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRequest))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answerBody(calls, body))
}

// request is a JSON-RPC 2.0 request.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// response is a JSON-RPC 2.0 response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// answerBody answers a single request or a batch.
func answerBody(calls map[key]Call, body []byte) []byte {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil {
			return mustMarshal(failed(nil, -32700, "parse error: "+err.Error()))
		}
		if len(batch) == 0 {
			return mustMarshal(failed(nil, -32600, "invalid request: an empty batch"))
		}
		out := make([]response, len(batch))
		for i, one := range batch {
			out[i] = answer(calls, one)
		}
		return mustMarshal(out)
	}
	return mustMarshal(answer(calls, body))
}

func answer(calls map[key]Call, raw []byte) response {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		return failed(nil, -32700, "parse error: "+err.Error())
	}
	var params []json.RawMessage
	if len(req.Params) > 0 && req.Params[0] == '[' {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return failed(req.ID, -32602, "invalid params: "+err.Error())
		}
	}
	first := firstParam(params)
	c, ok := calls[key{req.Method, first}]
	switch {
	case !ok:
		return failed(req.ID, NotRecorded, strings.TrimSpace("not recorded: "+req.Method+" "+first))
	case c.Error != nil:
		return failed(req.ID, c.Error.Code, c.Error.Message)
	}
	result := c.Result
	if result == nil {
		result = json.RawMessage("null")
	}
	return response{JSONRPC: "2.0", ID: idOf(req.ID), Result: result}
}

func failed(id json.RawMessage, code int, message string) response {
	return response{JSONRPC: "2.0", ID: idOf(id), Error: &RPCError{Code: code, Message: message}}
}

func idOf(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // raw messages that came in as valid JSON: cannot fail
		panic(fmt.Sprintf("conformance: encode a JSON-RPC answer: %v", err))
	}
	return b
}
