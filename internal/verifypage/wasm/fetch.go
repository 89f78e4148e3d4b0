//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/keeperhq/keeper/chainread"
)

// fetchCaller makes JSON-RPC 2.0 calls at one endpoint with the browser's
// fetch: WebAssembly has no sockets, and the page may only reach endpoints
// that answer CORS preflights, as any page may.
type fetchCaller struct{ url string }

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      json.RawMessage     `json:"id"`
	Result  json.RawMessage     `json:"result"`
	Error   *chainread.RPCError `json:"error"`
}

// Call posts one request and returns its result, raw ("null" included); an
// error object is returned as a *chainread.RPCError.
func (c fetchCaller) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: 1, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", method, c.url, err)
	}
	text, err := post(ctx, c.url, string(body))
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", method, c.url, err)
	}
	var resp rpcResponse
	if err := json.Unmarshal([]byte(text), &resp); err != nil {
		return nil, fmt.Errorf("%s at %s: the answer is not JSON-RPC: %w", method, c.url, err)
	}
	switch {
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Result == nil:
		return nil, fmt.Errorf("%s at %s: the answer has neither result nor error", method, c.url)
	}
	return resp.Result, nil
}

// post sends body to url and returns the answer's text; ctx's end aborts
// the request.
func post(ctx context.Context, url, body string) (string, error) {
	abort := js.Global().Get("AbortController").New()
	stop := context.AfterFunc(ctx, func() { abort.Call("abort") })
	defer stop()
	res, err := await(js.Global().Call("fetch", url, js.ValueOf(map[string]any{
		"method":         "POST",
		"headers":        map[string]any{"Content-Type": "application/json"},
		"body":           body,
		"cache":          "no-store",
		"credentials":    "omit",
		"referrerPolicy": "no-referrer",
		"signal":         abort.Get("signal"),
	})))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("cannot reach the endpoint (%w; it must allow CORS)", err)
	}
	if !res.Get("ok").Bool() {
		return "", fmt.Errorf("the endpoint answered HTTP %d", res.Get("status").Int())
	}
	text, err := await(res.Call("text"))
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	return text.String(), nil
}

// await blocks the calling goroutine until p settles; the page's event
// loop runs meanwhile.
func await(p js.Value) (js.Value, error) {
	type settled struct {
		v   js.Value
		err error
	}
	done := make(chan settled, 1)
	onOK := js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- settled{v: arg(args)}
		return nil
	})
	onErr := js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- settled{err: jsError(arg(args))}
		return nil
	})
	defer onOK.Release()
	defer onErr.Release()
	p.Call("then", onOK, onErr)
	s := <-done
	return s.v, s.err
}

func arg(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

func jsError(v js.Value) error {
	if v.Type() == js.TypeObject && v.Get("message").Type() == js.TypeString {
		return errors.New(v.Get("message").String())
	}
	return errors.New(js.Global().Call("String", v).String())
}

// promise runs f in a goroutine, so that it may await (fetch), and returns
// a Promise that settles with its outcome.
func promise(f func() (string, error)) js.Value {
	executor := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve, reject := args[0], args[1]
		go func() {
			out, err := f()
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(err.Error()))
				return
			}
			resolve.Invoke(out)
		}()
		return nil
	})
	defer executor.Release()
	return js.Global().Get("Promise").New(executor)
}
