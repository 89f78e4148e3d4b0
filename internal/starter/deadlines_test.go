package starter_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowPost sends body in pieces over about a second, as a slow link does.
func slowPost(url string, body []byte) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(body); i += len(body)/5 + 1 {
			time.Sleep(200 * time.Millisecond)
			if _, err := pw.Write(body[i:min(i+len(body)/5+1, len(body))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, url, pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

func TestABatchSentSlowerThanTheReadTimeoutIsStillTakenButAnEpochRequestIsNot(t *testing.T) {
	f := newEpochFixture(t, 64)
	f.api.LongRequestTimeout = 10 * time.Second
	srv := httptest.NewUnstartedServer(f.api.Handler())
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	batch, err := json.Marshal(map[string]any{"items": []any{item("slow-1"), item("slow-2")}})
	require.NoError(t, err)
	resp, err := slowPost(srv.URL+"/v1/evidence/batch", batch)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusMultiStatus, resp.StatusCode, "a long route reads and answers under KEEPER_HTTP_LONG_TIMEOUT")

	// Any other route keeps the server's timeouts: the body is cut off.
	resp, err = slowPost(srv.URL+"/rewarder/epochs/slow/compute", []byte(threeAccounts))
	if err == nil {
		defer resp.Body.Close()
		assert.NotEqual(t, http.StatusAccepted, resp.StatusCode)
	}
	assert.Empty(t, f.temporal.started(), "nothing was started from a request that was not read in time")
}
