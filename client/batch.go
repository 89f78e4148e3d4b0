package client

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/keeperhq/keeper/api"
)

// MaxBatchItems is the most evidence one SubmitBatch call takes (the API's
// limit per POST /v1/evidence/batch).
const MaxBatchItems = 1000

// BatchResult is what happened to one item of SubmitBatch.
type BatchResult struct {
	Index  int `json:"index"`  // the item's place in the items given
	Status int `json:"status"` // 202 stored; 200 its idempotency key's evidence, stored before; else Err's status
	// ID is the evidence, with Status 202 or 200: follow it with Evidence
	// or WaitConfirmed.
	ID             string `json:"id,omitempty"`
	Created        bool   `json:"created,omitempty"`         // true when this call stored it
	EvidenceStatus string `json:"evidence_status,omitempty"` // where the evidence stands (pending when just stored)
	Err            *Error `json:"error,omitempty"`           // why nothing was stored for the item
}

type batchAnswer struct {
	Items []BatchResult `json:"items"`
}

// SubmitBatch hands in up to MaxBatchItems evidence in one request (POST
// /v1/evidence/batch) and answers one result per item, in their order: the
// API validates, stores and answers each on its own, so some may be stored
// and others refused (their result's Err says why: the codes of
// SubmitEvidence, with a Field naming the item, e.g. items[3].digest).
//
// Each item carries its IdempotencyKey, or one made for it, so items sent
// again store nothing twice. Items refused with 429 (priority 6–10 while
// keeper is overloaded) are sent again, alone, after Retry-After, at most
// MaxRetries times; those still refused keep their 429. An error without
// results is for the request as a whole: nothing of it was stored. An
// error with results says the refused items could not be sent again (ctx
// ended, or that request failed); the results hold what was answered.
func (cl *Client) SubmitBatch(ctx context.Context, items []EvidenceRequest) ([]BatchResult, error) {
	if len(items) == 0 || len(items) > MaxBatchItems {
		return nil, fmt.Errorf("SubmitBatch takes 1 to %d items, not %d", MaxBatchItems, len(items))
	}
	wire := make([]api.EvidenceRequest, len(items))
	for i, it := range items {
		wire[i] = it.body(cmp.Or(it.IdempotencyKey, NewIdempotencyKey()))
	}
	results := make([]BatchResult, len(items))
	todo := make([]int, len(items)) // the items the next request sends
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		body := api.BatchRequest{Items: make([]api.EvidenceRequest, len(todo))}
		for k, i := range todo {
			body.Items[k] = wire[i]
		}
		var header http.Header
		ans, _, err := send[batchAnswer](ctx, cl, call{method: http.MethodPost, path: "/v1/evidence/batch", body: body, keyless: true, header: &header})
		if err == nil && len(ans.Items) != len(todo) {
			err = fmt.Errorf("unexpected answer to POST /v1/evidence/batch: %d results for %d items", len(ans.Items), len(todo))
		}
		if err != nil {
			if attempt == 0 {
				return nil, err
			}
			return results, err
		}
		var refused []int
		for k, r := range ans.Items {
			i := todo[k]
			r.Index = i
			if r.Err != nil {
				r.Err.Status = r.Status
			}
			results[i] = r
			if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
				refused = append(refused, i)
			}
		}
		if len(refused) == 0 || attempt >= cl.MaxRetries {
			return results, nil
		}
		todo = refused
		t := time.NewTimer(min(retryAfter(header.Get("Retry-After"), time.Now()), cl.MaxRetryWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return results, ctx.Err() // the refused items keep their 429
		case <-t.C:
		}
	}
}
