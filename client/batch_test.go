package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	keeper "github.com/keeperhq/keeper/client"
)

func TestSubmitBatchStoresTheValidItemsAndAnswersEachInOrder(t *testing.T) {
	s := newAPI(t)
	ctx := context.Background()
	res, err := keeper.New(s.url).SubmitBatch(ctx, []keeper.EvidenceRequest{
		{Digest: digest("a"), Chains: []string{"multi"}, Metadata: []byte(`{"case":1}`)},
		{Digest: "not hex", Chains: []string{"stub"}},
		{Content: []byte("test"), Chains: []string{"stub"}, Priority: 2},
	})
	require.NoError(t, err)
	require.Len(t, res, 3)

	for _, i := range []int{0, 2} {
		assert.Equal(t, i, res[i].Index)
		assert.Equal(t, http.StatusAccepted, res[i].Status)
		assert.True(t, res[i].Created)
		assert.Equal(t, keeper.StatusPending, res[i].EvidenceStatus)
		assert.Nil(t, res[i].Err)
	}
	require.NotNil(t, res[1].Err)
	assert.Equal(t, 1, res[1].Index)
	assert.Equal(t, http.StatusBadRequest, res[1].Status)
	assert.Equal(t, "invalid_digest", res[1].Err.Code)
	assert.Equal(t, "items[1].digest", res[1].Err.Field)
	assert.Contains(t, res[1].Err.Error(), "HTTP 400")
	assert.Empty(t, res[1].ID)

	content, err := keeper.New(s.url).Evidence(ctx, res[2].ID)
	require.NoError(t, err)
	assert.Equal(t, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", content.Digest)
	assert.Equal(t, 2, content.Priority)
	assert.Len(t, content.IdempotencyKey, 32, "each item got a key of its own")
	assert.Equal(t, []string{""}, s.postKeys(), "the keys travel in the items, not in the header")
}

func TestSubmitBatchSentAgainWithTheSameKeysStoresNothingTwice(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	items := []keeper.EvidenceRequest{
		{Digest: digest("a"), Chains: []string{"stub"}, IdempotencyKey: "upload-1"},
		{Digest: digest("b"), Chains: []string{"stub"}, IdempotencyKey: "upload-2"},
	}
	first, err := c.SubmitBatch(context.Background(), items)
	require.NoError(t, err)
	again, err := c.SubmitBatch(context.Background(), items)
	require.NoError(t, err)
	for i := range items {
		assert.Equal(t, http.StatusOK, again[i].Status)
		assert.False(t, again[i].Created)
		assert.Equal(t, first[i].ID, again[i].ID)
	}
	page, err := c.ListEvidence(context.Background(), keeper.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, page.Items, 2)
}

// Items refused with 429 are sent again, alone, after Retry-After; the
// others are not sent twice.
func TestSubmitBatchSendsTheItemsRefusedWith429AgainAfterRetryAfter(t *testing.T) {
	s := newAPI(t)
	var (
		posts  atomic.Int32
		second atomic.Value // the second request's body
	)
	s.setFront(func(w http.ResponseWriter, r *http.Request, api http.Handler) bool {
		switch posts.Add(1) {
		case 1: // as the API answers while overloaded: the priority 9 item refused
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusMultiStatus)
			fmt.Fprintf(w, `{"items":[{"index":0,"status":202,"id":"ev_00000000000000000000000a","created":true,"evidence_status":"pending"},`+
				`{"index":1,"status":429,"error":{"code":"overloaded","message":"items[1].priority: busy","field":"items[1].priority"}}]}`)
			return true
		case 2:
			body, _ := io.ReadAll(r.Body)
			second.Store(string(body))
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		return false
	})
	res, err := keeper.New(s.url).SubmitBatch(context.Background(), []keeper.EvidenceRequest{
		{Digest: digest("urgent"), Chains: []string{"stub"}, Priority: 1},
		{Digest: digest("later"), Chains: []string{"stub"}, Priority: 9},
	})
	require.NoError(t, err)
	assert.Equal(t, int32(2), posts.Load())
	assert.Contains(t, second.Load(), digest("later"))
	assert.NotContains(t, second.Load(), digest("urgent"), "an item answered is not sent again")

	assert.Equal(t, "ev_00000000000000000000000a", res[0].ID)
	assert.Equal(t, 1, res[1].Index, "the second request's results land on the caller's items")
	assert.Equal(t, http.StatusAccepted, res[1].Status)
	assert.Nil(t, res[1].Err)
}

func TestSubmitBatchRefusesMoreThanTheAPITakesWithoutARequest(t *testing.T) {
	s := newAPI(t)
	_, err := keeper.New(s.url).SubmitBatch(context.Background(), make([]keeper.EvidenceRequest, keeper.MaxBatchItems+1))
	require.Error(t, err)
	_, err = keeper.New(s.url).SubmitBatch(context.Background(), nil)
	require.Error(t, err)
	assert.Empty(t, s.postKeys())
}
