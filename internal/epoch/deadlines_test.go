package epoch_test

import (
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// Compute is not one of the API's long routes: its body, small by design
// (a large usage list goes through source), must arrive within the
// server's read timeout however long KEEPER_HTTP_LONG_TIMEOUT is, and a
// request not read in time starts nothing.
func TestAComputeRequestSentSlowerThanTheReadTimeoutIsCutOffAndStartsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 64)
		f.api.LongRequestTimeout = 10 * time.Second
		f.api.Registry = nil // a registry of its own for this second handler
		pipes := testkit.NewPipes()
		srv := &http.Server{Handler: f.api.Handler(), ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}
		go srv.Serve(pipes)
		c := pipes.Client()
		t.Cleanup(func() {
			c.CloseIdleConnections()
			srv.Close()
		})

		// The body in five pieces 200 ms apart, as a slow link sends it.
		body := []byte(threeAccounts)
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
		req, err := http.NewRequest(http.MethodPost, "http://keeper/rewarder/epochs/slow/compute", pr)
		assert.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		close(answered)
		if err == nil {
			defer resp.Body.Close()
			assert.NotEqual(t, http.StatusAccepted, resp.StatusCode)
		}
		assert.Empty(t, started(f.temporal), "nothing was started from a request that was not read in time")
	})
}
