package rpclimit_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/rpclimit"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

func post(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`)))
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// runs numbers the endpoints of TestClientsOfOneEndpointShareItsRate, one
// of its own each time it runs (-count).
var runs atomic.Int64

// Clients of one endpoint share its rate: two clients sending 30 requests
// together at 20 a second need half a second beyond the first second's
// burst. The endpoint answers in process, in a synctest bubble whose clock
// runs the limiter's waits.
func TestClientsOfOneEndpointShareItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url := fmt.Sprintf("http://shared-rate-%d.test", runs.Add(1)) // For's limiters live as long as the process
		var n atomic.Int64
		node := testkit.HandlerTransport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) })}
		a := &http.Client{Transport: rpclimit.For(url, 20).Transport(node)}
		b := &http.Client{Transport: rpclimit.For(url, 1000).Transport(node)}

		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range []*http.Client{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					assert.Equal(t, http.StatusOK, post(t, c, url))
				}
			}()
		}
		wg.Wait()
		assert.EqualValues(t, 30, n.Load())
		assert.Equal(t, 500*time.Millisecond, time.Since(start), "20 of the 30 go at once, the other 10 at 20 a second")
	})
}

// A 429 pauses the endpoint for its Retry-After and the request is sent
// again; the caller sees the answer that followed.
func TestA429PausesTheEndpointForItsRetryAfterAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Time
		node := testkit.HandlerTransport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			times = append(times, time.Now())
			if len(times) == 1 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			}
		})}
		l := rpclimit.New(0)
		c := &http.Client{Transport: l.Transport(node)}

		assert.Equal(t, http.StatusOK, post(t, c, "http://node.test"))
		require.Len(t, times, 2)
		assert.Equal(t, time.Second, times[1].Sub(times[0]), "the retry waited for Retry-After")
		assert.EqualValues(t, 1, l.Throttled())
	})
}

func TestRetryAfterReadsSecondsAndDatesWithinAMinute(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, 3*time.Second, rpclimit.RetryAfter("3", now))
	assert.Equal(t, 10*time.Second, rpclimit.RetryAfter(now.Add(10*time.Second).Format(http.TimeFormat), now))
	assert.Equal(t, time.Minute, rpclimit.RetryAfter("86400", now), "capped")
	assert.Equal(t, time.Second, rpclimit.RetryAfter("", now))
	assert.Equal(t, time.Second, rpclimit.RetryAfter("soon", now))
	assert.Zero(t, rpclimit.RetryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now))
}
