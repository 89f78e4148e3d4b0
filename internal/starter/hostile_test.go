package starter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
)

// newHostileFixture serves the API's own routes with the evidence routes as
// its feature (each feature's hostile requests are its own package's),
// logging into logs.
func newHostileFixture(t *testing.T) (*fixture, *bytes.Buffer) {
	t.Helper()
	f := newFixture(t, "etherlink", "solana")
	logs := &bytes.Buffer{}
	f.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
	f.h = openapitest.Handler(t, f.api.Handler())
	return f, logs
}

func TestHostileRequestsOnEveryRouteAre4xxWithAJSONErrorAndStoreNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, logs := newHostileFixture(t)
		tenMB := strings.Repeat("a", 10<<20)

		rows := []struct {
			Name, Method, Path, Body string
			Header                   map[string]string // on top of Content-Type: application/json when there is a body
			Status                   int
			Code, Field              string
		}{
			// POST /v1/evidence, beyond its own table.
			{"evidence sent as text/plain", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"]}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", "Content-Type"},
			{"evidence sent as multipart", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"]}`, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, "unsupported_media_type", "Content-Type"},
			{"a 10 MB evidence", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"],"metadata":{"a":"` + tenMB + `"}}`, nil, 413, "body_too_large", ""},
			// /health, /readyz, /metrics and routes that do not exist.
			{"a 10 MB PUT on /health", "PUT", "/health", tenMB, nil, 405, "method_not_allowed", ""},
			{"POST on /readyz", "POST", "/readyz", `{}`, nil, 405, "method_not_allowed", ""},
			{"DELETE on /metrics", "DELETE", "/metrics", "", nil, 405, "method_not_allowed", ""},
			{"a path from /health to the API", "GET", "/health/../v1/evidence", "", nil, 400, "invalid_path", ""},
			{"/HEALTH in capitals", "GET", "/HEALTH", "", nil, 404, "not_found", ""},
			{"/metrics with a NUL", "GET", "/metrics%00", "", nil, 404, "not_found", ""},
			{"/readyz with a trailing slash", "GET", "/readyz/", "", nil, 404, "not_found", ""},
			{"a route behind a right-to-left override", "GET", "/v1/%E2%80%AEevidence", "", nil, 404, "not_found", ""},
		}
		require.GreaterOrEqual(t, len(rows), 10)

		apitest.RequireAllRefused(t, f.h, logs, rows)

		// Nothing was stored.
		assert.Empty(t, f.stored(t))
	})
}

// A client that sends its headers and then only part of its body is cut
// off at the server's read timeout with a 408, and nothing is stored.
func TestASlowLorisBodyIsCutOffAtTheReadTimeoutAndStoresNothing(t *testing.T) {
	f, _ := newHostileFixture(t)
	srv := httptest.NewUnstartedServer(f.h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	for path, part := range map[string]string{
		"/v1/evidence": `{"digest":"` + hexDigest("slow") + `","chains":["stub"]`,
	} {
		pr, pw := io.Pipe()
		// The 408 with body_timeout is the read timeout's answer; the
		// context only keeps a server that never answers from hanging the run.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+path, pr)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		go func() { _, _ = pw.Write([]byte(part)) }() // the rest never comes
		resp, err := srv.Client().Do(req)
		require.NoError(t, err, path)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pw.Close()
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s: %s", path, raw)
		var e apitest.Problem
		require.NoError(t, json.Unmarshal(raw, &e), path)
		assert.Equal(t, "body_timeout", e.Code, path)
		assert.NotEmpty(t, e.Message, path)
	}

	assert.Empty(t, f.stored(t))
}

func TestJSONIsAcceptedWithACharsetOrWithoutAContentType(t *testing.T) {
	f, _ := newHostileFixture(t)
	for i, ct := range []string{"application/json; charset=UTF-8", "application/merge-patch+json", ""} {
		rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest(ct)+`","chains":["etherlink"]}`, map[string]string{"Content-Type": ct})
		require.Equal(t, http.StatusAccepted, rec.Code, "%q: %s", ct, rec.Body.String())
		assert.Len(t, f.stored(t), i+1)
	}
}
