package client_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	keeper "github.com/keeperhq/keeper/client"
)

// storeAway answers as the API does while its store cannot be reached.
func storeAway(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Retry-After", retryAfter)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"code":"store_unavailable","message":"load evidence failed: keeper's store cannot be reached; retry after Retry-After"}`))
}

func TestARetryAfterEndingPastTheDeadlineIsNotWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		c := keeper.New("http://keeper.test")
		c.HTTP = inProcess(func(w http.ResponseWriter, r *http.Request) {
			attempts.Add(1)
			storeAway(w, "30")
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Evidence(ctx, "ev_000000000000000000000000")
		assert.Zero(t, time.Since(start), "it did not sleep into the deadline")
		assert.True(t, keeper.IsCode(err, "store_unavailable"), "%v", err)
		assert.Equal(t, int32(1), attempts.Load())
	})
}

func TestBatchItemsRefusedWhileTheStoreIsAwayAreSentAgain(t *testing.T) {
	s := newAPI(t)
	var away atomic.Bool
	s.setFront(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != "/v1/evidence/batch" || away.Swap(true) {
			return false
		}
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMultiStatus)
		var items []string
		for i := range 2 {
			items = append(items, fmt.Sprintf(`{"index":%d,"status":503,"error":{"code":"store_unavailable","message":"items[%d]: store evidence failed","field":"items[%d]"}}`, i, i, i))
		}
		w.Write([]byte(`{"items":[` + strings.Join(items, ",") + `]}`))
		return true
	})
	res, err := keeper.New(s.url).SubmitBatch(context.Background(), []keeper.EvidenceRequest{
		{Digest: digest("bulk 1"), Chains: []string{"stub"}}, {Digest: digest("bulk 2"), Chains: []string{"stub"}},
	})
	require.NoError(t, err)
	for _, r := range res {
		assert.Equal(t, http.StatusAccepted, r.Status, "%+v", r.Err)
	}
}

func TestWaitConfirmedKeepsAskingWhileTheStoreIsAwayLongerThanTheRetries(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest("outage"), Chains: []string{"stub"}})
	require.NoError(t, err)
	s.confirm(t)
	var refused atomic.Int32
	s.setFront(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if refused.Add(1) > int32(2*(c.MaxRetries+1)) { // two calls' worth of attempts
			return false
		}
		storeAway(w, "0")
		return true
	})
	done, err := c.WaitConfirmed(ctx, ev.ID, 10*time.Millisecond, nil)
	require.NoError(t, err)
	assert.Equal(t, keeper.StatusConfirmed, done.Status)
}
