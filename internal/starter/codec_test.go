package starter_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/keeperhq/keeper/internal/codec"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

const uiOrigin = "http://127.0.0.1:8233"

func codecServer(t *testing.T, token string, withCodec bool) *httptest.Server {
	st := storetest.SQLite(t)
	api := &starter.API{Store: st, Features: []starter.Feature{evidenceRoutes(st)},
		Auth: starter.AuthOptions{Token: token}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if withCodec {
		c, err := codec.New(codec.Key{ID: "k1", Secret: [codec.KeySize]byte{1, 2, 3}})
		require.NoError(t, err)
		api.Codec = starter.CodecOptions{Handler: c.Handler(), AllowOrigins: []string{uiOrigin}}
	}
	srv := httptest.NewServer(openapitest.Handler(t, api.Handler()))
	t.Cleanup(srv.Close)
	return srv
}

// preflight sends what a browser sends before the Web UI's codec call.
func preflight(t *testing.T, url, origin string) *http.Response {
	req, err := http.NewRequest(http.MethodOptions, url, nil)
	require.NoError(t, err)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-namespace")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

const payloadsJSON = `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"eyJXYWxsZXQiOiIweGFiYyJ9"}]}`

func postCodec(t *testing.T, url, origin, token string) (*http.Response, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payloadsJSON))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestTheWebUIsCodecPreflightIsAnsweredWithoutTheToken(t *testing.T) {
	srv := codecServer(t, "s3cret-token", true)
	for _, path := range []string{"/codec/encode", "/codec/decode"} {
		resp := preflight(t, srv.URL+path, uiOrigin)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode, path)
		assert.Equal(t, uiOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "POST", resp.Header.Get("Access-Control-Allow-Methods"))
		allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
		for _, h := range []string{"authorization", "content-type", "x-namespace"} {
			assert.Contains(t, allowed, h)
		}
		assert.Contains(t, resp.Header.Values("Vary"), "Origin")
	}
}

func TestACodecPreflightFromAnotherOriginIsRefused(t *testing.T) {
	srv := codecServer(t, "", true)
	resp := preflight(t, srv.URL+"/codec/decode", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	post, _ := postCodec(t, srv.URL+"/codec/decode", "https://evil.example", "")
	assert.Empty(t, post.Header.Get("Access-Control-Allow-Origin"), "a browser keeps the answer from that page")
}

func TestWithATokenTheCodecNeedsItAndItsRefusalCarriesCORSHeaders(t *testing.T) {
	srv := codecServer(t, "s3cret-token", true)
	for _, token := range []string{"", "wrong"} {
		resp, body := postCodec(t, srv.URL+"/codec/decode", uiOrigin, token)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Contains(t, body, `"code": "unauthorized"`)
		assert.Equal(t, uiOrigin, resp.Header.Get("Access-Control-Allow-Origin"), "the UI can show the refusal")
	}

	enc, body := postCodec(t, srv.URL+"/codec/encode", uiOrigin, "s3cret-token")
	require.Equal(t, http.StatusOK, enc.StatusCode, body)
	assert.Equal(t, uiOrigin, enc.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, body, `"encryption-key-id"`)
	assert.NotContains(t, body, "eyJXYWxsZXQiOiIweGFiYyJ9", "the payload is encrypted")
}

func TestTheCodecRoutesDecodeWhatTheyEncodedForTheTemporalCLI(t *testing.T) {
	srv := codecServer(t, "s3cret-token", true)
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: srv.URL + "/codec",
		ModifyRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer s3cret-token") // temporal --codec-auth
			return nil
		},
	})
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), remote)
	p, err := dc.ToPayload(map[string]string{"wallet": "0xabc"})
	require.NoError(t, err)
	assert.Equal(t, "binary/encrypted", string(p.Metadata["encoding"]))
	var back map[string]string
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, "0xabc", back["wallet"])
}

func TestBadCodecRequestsGetTheAPIsJSONError(t *testing.T) {
	srv := codecServer(t, "", true)
	for _, body := range []string{`{"payloads":`, `{"payloads":[{"metadata":{"encoding":"YmluYXJ5L2VuY3J5cHRlZA=="},"data":"AAAA"}]}`} {
		resp, err := http.Post(srv.URL+"/codec/decode", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		var e struct{ Code, Message, Field string }
		require.NoError(t, json.Unmarshal(raw, &e), string(raw))
		assert.Equal(t, "invalid_payloads", e.Code)
		assert.Equal(t, "payloads", e.Field)
		assert.NotEmpty(t, e.Message)
	}
}

func TestTheCodecRoutesAnswerOnlyPOST(t *testing.T) {
	srv := codecServer(t, "", true)
	resp := call(t, "GET", srv.URL+"/codec/decode", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
}

func TestWithoutAKeyFileThereIsNoCodecRoute(t *testing.T) {
	srv := codecServer(t, "", false)
	resp, _ := postCodec(t, srv.URL+"/codec/decode", uiOrigin, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, http.StatusNotFound, preflight(t, srv.URL+"/codec/decode", uiOrigin).StatusCode)
}
