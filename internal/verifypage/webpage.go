// Package verifypage is the receipt verification page: one self-contained HTML
// file (inline CSS and JavaScript, nothing fetched but the JSON-RPC calls to
// the endpoints its user picks) that hashes a file in the browser and checks
// its receipt against the chains themselves with keeper's own verifier,
// package receipt/verify compiled to WebAssembly and inlined in the page
// (docs/receipts.md, "Verifying in a browser"): the page's JavaScript shows
// what the user gives and what the verifier reports, and judges nothing.
// keeper serves it at /verify, offering the endpoints of the chains it is
// configured with beside the public ones; saved to disk, the page works the
// same.
//
// The verifier is generated: `go generate ./internal/verifypage` builds
// ./wasm for js/wasm into verifier.wasm.gz and copies the Go toolchain's
// wasm_exec.js beside it (./gen).
package verifypage

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/keeperhq/keeper/internal/redact"
)

//go:generate go run ./gen

var (
	//go:embed verify.html
	html []byte
	//go:embed wasm_exec.js
	wasmExec []byte
	//go:embed verifier.wasm.gz
	verifier []byte

	page = inline(html, wasmExec, verifier)
)

// The page's empty script blocks that inline fills with the Go toolchain's
// glue and the gzipped module, base64 (which holds no "<").
const (
	glueMarker     = `<script id="wasm-exec"></script>`
	verifierMarker = `<script type="application/octet-stream" id="verifier"></script>`
)

// inline is the page with its verifier in it.
func inline(html, glue, gz []byte) []byte {
	html = bytes.Replace(html, []byte(glueMarker), []byte(`<script id="wasm-exec">`+string(glue)+`</script>`), 1)
	return bytes.Replace(html, []byte(verifierMarker),
		[]byte(`<script type="application/octet-stream" id="verifier">`+base64.StdEncoding.EncodeToString(gz)+`</script>`), 1)
}

// marker is the page's empty network map, which Render replaces.
const marker = `<script type="application/json" id="keeper-networks">{}</script>`

// Networks returns the JSON-RPC endpoints of the chains a keeper is
// configured with, by CAIP-2 network id ("eip155:42793", "solana:<first 32
// characters of the genesis hash>"). It may return fewer when a node does
// not answer.
type Networks func(ctx context.Context) map[string]string

// Page is the verification page as a file, with no endpoints but its built-in
// public ones.
func Page() []byte { return bytes.Clone(page) }

// Render is the page with networks' shareable endpoints injected; the page
// offers them beside its built-in public ones, never preferred to them, and
// fills them in only for a network with no public endpoint. Endpoints that
// may carry a secret are left out (see Shareable).
func Render(networks map[string]string) []byte {
	keep := map[string]string{}
	for id, u := range networks {
		if id != "" && Shareable(u) {
			keep[id] = u
		}
	}
	// json.Marshal escapes <, > and &, so no value can end the script block.
	m, err := json.Marshal(keep)
	if err != nil || len(keep) == 0 {
		return Page()
	}
	block := `<script type="application/json" id="keeper-networks">` + string(m) + `</script>`
	return bytes.Replace(page, []byte(marker), []byte(block), 1)
}

// Shareable tells whether an endpoint URL can be shown to anyone who opens
// the page: http or https, with nothing the redactor would mask, no user
// info, query or fragment, and no path (providers put API keys in paths, as
// in https://host/v2/<key>).
func Shareable(u string) bool {
	p, err := url.Parse(u)
	if err != nil || redact.URL(u) != u {
		return false
	}
	return (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" && p.User == nil &&
		p.RawQuery == "" && !p.ForceQuery && p.Fragment == "" && p.Opaque == "" && (p.Path == "" || p.Path == "/")
}

// Handler serves the page, asking networks (nil: none) for the endpoints to
// offer at every request, for at most two seconds.
func Handler(networks Networks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var known map[string]string
		if networks != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			known = networks(ctx)
			cancel()
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Inline code only (and the WebAssembly it compiles), nothing loaded,
		// no framing; fetch may reach any endpoint, since the user picks it.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'unsafe-inline'; "+
			"connect-src http: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
		_, _ = w.Write(Render(known))
	})
}
