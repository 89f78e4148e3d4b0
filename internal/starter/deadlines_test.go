package starter_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// servePipes serves h over an in-memory network with the server's read and
// write timeouts, so that a synctest bubble's clock runs them; the server
// stops when the test ends. It returns a client of it.
func servePipes(t *testing.T, h http.Handler, timeout time.Duration) *http.Client {
	t.Helper()
	pipes := testkit.NewPipes()
	srv := &http.Server{Handler: h, ReadTimeout: timeout, WriteTimeout: timeout}
	go srv.Serve(pipes)
	c := pipes.Client()
	t.Cleanup(func() {
		c.CloseIdleConnections()
		srv.Close()
	})
	return c
}

// slowPost sends body in five pieces 200 ms apart, as a slow link does.
func slowPost(c *http.Client, url string, body []byte) (*http.Response, error) {
	pr, pw := io.Pipe()
	answered := make(chan struct{})
	go func() {
		defer pw.Close()
		for i := 0; i < len(body); i += len(body)/5 + 1 {
			select {
			case <-answered: // cut off before the end
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := pw.Write(body[i:min(i+len(body)/5+1, len(body))]); err != nil {
				return
			}
		}
	}()
	defer close(answered)
	req, err := http.NewRequest(http.MethodPost, url, pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

func TestABatchSentSlowerThanTheReadTimeoutIsStillTakenButARedriveIsNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.api.LongRequestTimeout = 10 * time.Second
		c := servePipes(t, f.api.Handler(), 300*time.Millisecond)

		batch, err := json.Marshal(map[string]any{"items": []any{item("slow-1"), item("slow-2")}})
		require.NoError(t, err)
		resp, err := slowPost(c, "http://keeper/v1/evidence/batch", batch)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusMultiStatus, resp.StatusCode, "a long route reads and answers under KEEPER_HTTP_LONG_TIMEOUT")

		// Any other route keeps the server's timeouts: the body is cut off.
		resp, err = slowPost(c, "http://keeper/v1/dead-letters/redrive", []byte(`{"chain":"stub","dry_run":true}`))
		if err == nil {
			defer resp.Body.Close()
			assert.NotEqual(t, http.StatusOK, resp.StatusCode)
		}
	})
}
