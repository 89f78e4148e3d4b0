//go:build js && wasm

// Command wasm is receipt/verify compiled to WebAssembly for the /verify
// page (docs/receipts.md, "Verifying in a browser"): the page judges
// nothing itself, it hands what the user gave to keeperVerify and shows the
// Report. `go generate ./internal/verifypage` builds it into
// verifier.wasm.gz.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"syscall/js"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// input is what the page hands keeperVerify, as JSON. The receipt and the
// trust roots are the files' exact text.
type input struct {
	Receipt     string              `json:"receipt"`
	Trust       string              `json:"trust"`
	TrustUpdate string              `json:"trustUpdate"`
	LogKey      string              `json:"logKey"`
	Accounts    []string            `json:"accounts"`
	FileSHA256  string              `json:"fileSHA256"`
	Endpoints   map[string][]string `json:"endpoints"` // chain name → JSON-RPC URLs, all asked
	Clocks      []string            `json:"clocks"`    // CAIP-2 networks trusted for time beyond the defaults
}

func main() {
	js.Global().Set("keeperVerify", js.FuncOf(keeperVerify))
	js.Global().Set("keeperAnchors", js.FuncOf(keeperAnchors))
	js.Global().Set("keeperSignedRoot", js.FuncOf(keeperSignedRoot))
	js.Global().Set("keeperPublicEndpoints", js.FuncOf(keeperPublicEndpoints))
	select {} // serve calls until the page closes
}

// keeperVerify(inputJSON) returns a Promise of the Report as JSON; an input
// that does not decode rejects it.
func keeperVerify(_ js.Value, args []js.Value) any {
	var in input
	err := errors.New("keeperVerify takes one argument, the input as JSON")
	if len(args) == 1 && args[0].Type() == js.TypeString {
		err = decodeStrict([]byte(args[0].String()), &in)
	}
	return promise(func() (string, error) {
		if err != nil {
			return "", err
		}
		rep := verify.Verify(context.Background(), in.verifyInput(), verify.Options{
			Endpoints: in.Endpoints,
			Caller:    func(url string) chainread.Caller { return fetchCaller{url: url} },
			Clocks:    in.Clocks,
		})
		out, err := json.Marshal(rep)
		return string(out), err
	})
}

func (in input) verifyInput() verify.Input {
	v := verify.Input{
		Receipt:    []byte(in.Receipt),
		LogKey:     in.LogKey,
		Accounts:   in.Accounts,
		FileSHA256: in.FileSHA256,
	}
	if in.Trust != "" {
		v.Trust = []byte(in.Trust)
	}
	if in.TrustUpdate != "" {
		v.TrustUpdate = []byte(in.TrustUpdate)
	}
	return v
}

// anchor is what the page shows of an anchor before verifying: a field
// for its chain's endpoints, named by its network when the receipt names
// one (a version 1 anchor does not: its endpoint's answer names it).
type anchor struct {
	Chain   string `json:"chain"`
	Network string `json:"network"`
	Name    string `json:"name"`
	Testnet bool   `json:"testnet"`
}

// keeperAnchors(receiptText) returns, as JSON, {"anchors": [...]} read by
// the verifier's own decoder, or {"error": "..."} for a receipt that does
// not read; keeperVerify judges it either way.
func keeperAnchors(_ js.Value, args []js.Value) any {
	var out struct {
		Anchors []anchor `json:"anchors"`
		Error   string   `json:"error,omitempty"`
	}
	var data []byte
	if len(args) == 1 && args[0].Type() == js.TypeString {
		data = []byte(args[0].String())
	}
	parse := receipt.Parse
	if receipt.IsTLogProof(data) {
		parse = receipt.ParseTLogProof
	}
	r, err := parse(data)
	if err != nil {
		out.Error = err.Error()
	}
	for _, a := range r.Anchors {
		name, testnet := "", false
		if a.Network != "" {
			name, testnet = verify.NetworkName(a.Network)
		}
		out.Anchors = append(out.Anchors, anchor{Chain: a.Chain, Network: a.Network, Name: name, Testnet: testnet})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// keeperSignedRoot(trustText) tells whether a trust root is a signed note
// (which vouches only for itself, unless its key is pinned apart from it)
// rather than plain JSON.
func keeperSignedRoot(_ js.Value, args []js.Value) any {
	return len(args) == 1 && args[0].Type() == js.TypeString && trust.IsSigned([]byte(args[0].String()))
}

// keeperPublicEndpoints() returns, as JSON, the public endpoints keeper
// verify asks by default, by network, so that the page asks the same.
func keeperPublicEndpoints(js.Value, []js.Value) any {
	b, _ := json.Marshal(verify.PublicEndpoints)
	return string(b)
}

// decodeStrict decodes exactly one JSON value with no unknown field.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the input")
	}
	return nil
}
