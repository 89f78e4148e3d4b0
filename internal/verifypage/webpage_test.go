package verifypage_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/verifypage"
)

// injected reads the network map the page carries.
func injected(t *testing.T, html []byte) map[string]string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="keeper-networks">(.*?)</script>`).FindAllSubmatch(html, -1)
	require.Len(t, m, 1, "the page has one network map")
	var out map[string]string
	require.NoError(t, json.Unmarshal(m[0][1], &out))
	return out
}

// generated are the page's inlined blocks: the Go toolchain's glue and the
// verifier module.
var generated = regexp.MustCompile(`(?s)<script id="wasm-exec">.*?</script>|<script type="application/octet-stream" id="verifier">.*?</script>`)

// ownCode is the page less what go generate made.
func ownCode(html string) string { return generated.ReplaceAllString(html, "") }

func TestPageLoadsNothingAndWorksSavedAsAFile(t *testing.T) {
	html := ownCode(string(verifypage.Page()))
	for _, forbidden := range []string{" src=", "<link", "@import", "url(", "<iframe", "<base", "import(", "XMLHttpRequest", "fetch("} {
		assert.NotContains(t, html, forbidden, "the page is self-contained: every byte of code is inline, and only the verifier asks the network")
	}
	assert.Contains(t, html, `crypto.subtle.digest("SHA-256"`, "the file is hashed in the browser")
	assert.Contains(t, html, "keeperVerify(", "the verifier judges")
	assert.Less(t, strings.Count(html, "\n"), 500, "its own code small enough to read before trusting it")
	assert.Empty(t, injected(t, verifypage.Page()), "a page from disk knows only its built-in endpoints")
}

func TestThePageInlinesTheGeneratedVerifier(t *testing.T) {
	page := string(verifypage.Page())
	glue, err := os.ReadFile("wasm_exec.js")
	require.NoError(t, err)
	gz, err := os.ReadFile("verifier.wasm.gz")
	require.NoError(t, err)
	assert.NotContains(t, strings.ToLower(string(glue)), "</script", "the glue cannot end its script block")
	assert.Equal(t, 1, strings.Count(page, `<script id="wasm-exec">`+string(glue)+`</script>`), "the Go toolchain's wasm_exec.js, byte for byte")
	assert.Equal(t, 1, strings.Count(page, `<script type="application/octet-stream" id="verifier">`+base64.StdEncoding.EncodeToString(gz)+`</script>`),
		"the module, gzipped and base64")
	t.Logf("page %d bytes; verifier %d bytes gzipped", len(page), len(gz))
}

// TestTheEmbeddedVerifierIsCurrent rebuilds the verifier as go generate
// does and compares it with the committed files: the build is
// reproducible (trimmed paths, no VCS stamp, a gzip header with no name
// or time), so any difference is a change to receipt/verify, its
// dependencies, the Go version or ./wasm that was not regenerated.
func TestTheEmbeddedVerifierIsCurrent(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./gen", "-out", dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go run ./gen: %s", out)
	for _, name := range []string{"verifier.wasm.gz", "wasm_exec.js"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s is not what the sources make: run go generate ./internal/verifypage", name)
	}
}

func TestRenderPrefillsOnlyEndpointsWithoutSecrets(t *testing.T) {
	html := verifypage.Render(map[string]string{
		"eip155:42793":                    "http://127.0.0.1:8545",
		"solana:Abc":                      "https://rpc.example.org/",
		"eip155:1":                        "https://eth.example.org/?api-key=s3cret",
		"eip155:2":                        "https://user:pw@eth.example.org",
		"eip155:3":                        "https://eth.example.org/v2/s3cretkey",
		"eip155:4":                        "https://eth.example.org?x=1",
		"eip155:5":                        "wss://eth.example.org",
		"eip155:6":                        "https://eth.example.org/#s3cret",
		"solana:EtWTRABZaYq6iMfeYKouRu16": "",
	})
	assert.Equal(t, map[string]string{"eip155:42793": "http://127.0.0.1:8545", "solana:Abc": "https://rpc.example.org/"}, injected(t, html))
	for _, secret := range []string{"s3cret", "pw@", "x=1"} {
		assert.NotContains(t, string(html), secret)
	}
}

func TestRenderCannotEndTheScriptBlock(t *testing.T) {
	html := verifypage.Render(map[string]string{`eip155:1</script><script>alert(1)</script>`: "http://127.0.0.1:8545"})
	assert.NotContains(t, string(html), "alert(1)</script>")
	assert.Contains(t, injected(t, html), `eip155:1</script><script>alert(1)</script>`, "the id survives, escaped")
}

func TestHandlerServesThePageWithTheNodesEndpoints(t *testing.T) {
	var asked bool
	h := verifypage.Handler(func(ctx context.Context) map[string]string {
		asked = true
		_, hasDeadline := ctx.Deadline()
		assert.True(t, hasDeadline, "the page never waits long on a node")
		return map[string]string{"eip155:42793": "http://127.0.0.1:8545"}
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/verify", nil))
	require.True(t, asked)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	csp := rec.Header().Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "script-src 'unsafe-inline' 'wasm-unsafe-eval';", "inline code and the WebAssembly it compiles, nothing else")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, map[string]string{"eip155:42793": "http://127.0.0.1:8545"}, injected(t, rec.Body.Bytes()))

	rec = httptest.NewRecorder()
	verifypage.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/verify", nil))
	assert.True(t, bytes.Equal(verifypage.Page(), rec.Body.Bytes()), "no networks: the page as saved")
}
