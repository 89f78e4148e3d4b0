package starter_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func authServer(t *testing.T, auth starter.AuthOptions, maxInFlight int) (*httptest.Server, *store.Store) {
	st := storetest.SQLite(t)
	api := &starter.API{Store: st, Auth: auth, MaxInFlight: maxInFlight, Features: []starter.Feature{evidenceRoutes(st)},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(openapitest.Handler(t, api.Handler()))
	t.Cleanup(srv.Close)
	return srv, st
}

func call(t *testing.T, method, url, token, body string) *http.Response {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestWithATokenEveryV1RouteNeedsItAndHealthStaysOpen(t *testing.T) {
	srv, st := authServer(t, starter.AuthOptions{Token: "s3cret-token", MetricsOpen: false}, 0)
	body := `{"digest":"` + hexDigest("auth") + `","chains":["stub"]}`

	for _, c := range []struct{ method, path, token string }{
		{"POST", "/v1/evidence", ""},
		{"POST", "/v1/evidence", "wrong"},
		{"POST", "/v1/evidence/batch", ""},
		{"GET", "/v1/evidence", "s3cret-toke"},
		{"GET", "/v1/evidence/ev_000000000000000000000000", "S3CRET-TOKEN"},
		{"GET", "/metrics", ""},
	} {
		resp := call(t, c.method, srv.URL+c.path, c.token, body)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s with %q", c.method, c.path, c.token)
		assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		raw, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(raw), `"code": "unauthorized"`)
		assert.NotContains(t, string(raw), "s3cret", "the token is never echoed")
	}
	n, err := st.PendingCount(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "refused requests store nothing")

	basic, err := http.NewRequest("GET", srv.URL+"/v1/evidence", nil)
	require.NoError(t, err)
	basic.Header.Set("Authorization", "Basic s3cret-token")
	resp, err := http.DefaultClient.Do(basic)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "only the Bearer scheme")

	assert.Equal(t, http.StatusOK, call(t, "GET", srv.URL+"/health", "", "").StatusCode)
	assert.Equal(t, http.StatusAccepted, call(t, "POST", srv.URL+"/v1/evidence", "s3cret-token", body).StatusCode)
	assert.Equal(t, http.StatusOK, call(t, "GET", srv.URL+"/metrics", "s3cret-token", "").StatusCode)
}

func TestMetricsCanStayOpenWithAToken(t *testing.T) {
	srv, _ := authServer(t, starter.AuthOptions{Token: "t", MetricsOpen: true}, 0)
	assert.Equal(t, http.StatusOK, call(t, "GET", srv.URL+"/metrics", "", "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, call(t, "GET", srv.URL+"/v1/evidence", "", "").StatusCode)
}

func TestASlowBodyHoldsItsSlotAndTheNextRequestIsTurnedAwayNotQueued(t *testing.T) {
	srv, _ := authServer(t, starter.AuthOptions{}, 1)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest("POST", srv.URL+"/v1/evidence", pr)
	require.NoError(t, err)
	slowDone := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			slowDone <- resp
		}
		close(slowDone)
	}()
	pw.Write([]byte(`{"digest":`)) // a slow-loris client: the rest never comes (until we close)

	require.Eventually(t, func() bool {
		resp := call(t, "GET", srv.URL+"/v1/evidence", "", "")
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
	}, 5*time.Second, 10*time.Millisecond, "with the one slot taken, a second request is refused at once")
	assert.Equal(t, http.StatusOK, call(t, "GET", srv.URL+"/health", "", "").StatusCode, "health is never capped")
	metrics, err := io.ReadAll(call(t, "GET", srv.URL+"/metrics", "", "").Body)
	require.NoError(t, err)
	assert.Regexp(t, `keeper_busy_rejections_total\{endpoint="v1"\} [1-9]`, string(metrics), "the refusal is counted")

	pw.CloseWithError(io.ErrUnexpectedEOF)
	if resp := <-slowDone; resp != nil {
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		resp.Body.Close()
	}
	require.Eventually(t, func() bool {
		return call(t, "GET", srv.URL+"/v1/evidence", "", "").StatusCode == http.StatusOK
	}, 5*time.Second, 10*time.Millisecond, "the slot is released")
}

func TestMetricsServedBesideTheAPINeedTheTokenOnlyWhenMetricsAreClosed(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "keeper_up 1\n") })
	open := httptest.NewServer(starter.MetricsAuth(starter.AuthOptions{Token: "s3cret", MetricsOpen: true}, metrics))
	t.Cleanup(open.Close)
	assert.Equal(t, http.StatusOK, call(t, "GET", open.URL+"/metrics", "", "").StatusCode)

	closed := httptest.NewServer(starter.MetricsAuth(starter.AuthOptions{Token: "s3cret"}, metrics))
	t.Cleanup(closed.Close)
	assert.Equal(t, http.StatusUnauthorized, call(t, "GET", closed.URL+"/metrics", "", "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, call(t, "GET", closed.URL+"/metrics", "wrong", "").StatusCode)
	assert.Equal(t, http.StatusOK, call(t, "GET", closed.URL+"/metrics", "s3cret", "").StatusCode)
}
