package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/keeperhq/keeper/internal/dev/conformance"
)

// endpoint is one named JSON-RPC endpoint of a vector and what it answers.
type endpoint struct {
	name  string
	calls []conformance.Call
}

// evmNode is a node of chain c that knows txs.
func evmNode(name string, c *evmChain, txs ...*evmTx) *endpoint {
	e := &endpoint{name: name, calls: c.nodeCalls()}
	for _, x := range txs {
		e.calls = append(e.calls, x.calls()...)
	}
	return e
}

// solNode is a node of cluster c that knows txs.
func solNode(name string, c *solCluster, txs ...*solTx) *endpoint {
	e := &endpoint{name: name, calls: c.nodeCalls()}
	for _, x := range txs {
		e.calls = append(e.calls, x.calls()...)
	}
	return e
}

// find is the recorded call of method whose first parameter is first
// (nil: a call without parameters).
func (e *endpoint) find(method string, first any) *conformance.Call {
	want := mustJSON(first)
	for i, c := range e.calls {
		if c.Method != method {
			continue
		}
		if first == nil && len(c.Params) == 0 || len(c.Params) > 0 && bytes.Equal(c.Params[0], want) {
			return &e.calls[i]
		}
	}
	panic(fmt.Sprintf("endpoint %s records no %s %s", e.name, method, want))
}

// answer makes the endpoint answer method (first) with result instead.
func (e *endpoint) answer(method string, first, result any) *endpoint {
	e.find(method, first).Result = mustJSON(result)
	return e
}

// edit changes the object the endpoint answers method (first) with.
func (e *endpoint) edit(method string, first any, change func(map[string]any)) *endpoint {
	c := e.find(method, first)
	m := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(c.Result))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		panic(fmt.Sprintf("endpoint %s: %s %v answers no object: %v", e.name, method, first, err))
	}
	change(m)
	c.Result = mustJSON(m)
	return e
}

// call is a recorded call.
func call(method string, params []any, result any) conformance.Call {
	c := conformance.Call{Method: method, Params: make([]json.RawMessage, len(params)), Result: mustJSON(result)}
	for i, p := range params {
		c.Params[i] = mustJSON(p)
	}
	return c
}

// mustJSON encodes the generator's own plain data, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err))
	}
	return b
}

func mustUnmarshal(data []byte, v any) {
	if err := json.Unmarshal(data, v); err != nil {
		panic(fmt.Sprintf("decode %T: %v", v, err))
	}
}
