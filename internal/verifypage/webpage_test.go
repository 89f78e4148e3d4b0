package verifypage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

func TestPageLoadsNothingAndWorksSavedAsAFile(t *testing.T) {
	html := ownCode(string(verifypage.Page())) // the vendored files: TestThePageInlinesExactlyThePinnedPackagesFiles
	for _, forbidden := range []string{" src=", "<link", "@import", "url(", "<iframe", "<base", "import(", "XMLHttpRequest"} {
		assert.NotContains(t, html, forbidden, "the page is self-contained: every byte of code is inline")
	}
	assert.Equal(t, 1, strings.Count(html, "fetch("), "the one network call is the JSON-RPC helper's")
	assert.Contains(t, html, `crypto.subtle.digest("SHA-256"`, "the file is hashed in the browser")
	assert.Less(t, strings.Count(html, "\n"), 1100, "its own code small enough to read before trusting it")
	assert.Empty(t, injected(t, verifypage.Page()), "a page from disk knows only its built-in endpoints")
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
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, map[string]string{"eip155:42793": "http://127.0.0.1:8545"}, injected(t, rec.Body.Bytes()))

	rec = httptest.NewRecorder()
	verifypage.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/verify", nil))
	assert.True(t, bytes.Equal(verifypage.Page(), rec.Body.Bytes()), "no networks: the page as saved")
}
