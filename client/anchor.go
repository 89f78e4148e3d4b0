package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/receipt"
)

// Evidence statuses.
const (
	StatusPending    = "pending"
	StatusBatched    = "batched"
	StatusSubmitted  = "submitted"
	StatusConfirmed  = "confirmed"
	StatusDeadLetter = "dead_letter"
)

// EvidenceRequest is an evidence to hand in: Digest or Content, and
// Chains. It is sent as the API's body, api.EvidenceRequest, with Content
// in base64.
type EvidenceRequest struct {
	Digest   string          // hex SHA-256
	Content  []byte          // or the bytes, hashed by keeper
	Chains   []string        // "etherlink", "solana", "stub", or "multi" for every configured chain
	Priority int             // 1 (highest) to 10; 0: the API's default (5)
	Metadata json.RawMessage // a JSON object, at most 16 KiB
	// IdempotencyKey is sent as the Idempotency-Key header (SubmitBatch:
	// in the item); "" makes one for the call (and its retries).
	IdempotencyKey string
}

// body is r as the API takes it, with key as its idempotency_key ("": none,
// the key going in the header).
func (r EvidenceRequest) body(key string) api.EvidenceRequest {
	b := api.EvidenceRequest{Digest: r.Digest, Chains: r.Chains, Priority: r.Priority, Metadata: r.Metadata, IdempotencyKey: key}
	if len(r.Content) > 0 {
		b.Content = base64.StdEncoding.EncodeToString(r.Content)
	}
	return b
}

// ListOptions choose a page of GET /v1/evidence.
type ListOptions struct {
	Status string // only evidence in this status
	Limit  int    // 0: the API's default (100)
	Cursor string // the previous page's NextCursor
}

// pageQuery is a listing's query: an optional filter, limit and cursor.
func pageQuery(filter, value string, limit int, cursor string) url.Values {
	q := url.Values{}
	if value != "" {
		q.Set(filter, value)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// SubmitEvidence hands in an evidence (POST /v1/evidence). Sent again with
// the same IdempotencyKey it answers the evidence it made the first time.
func (cl *Client) SubmitEvidence(ctx context.Context, r EvidenceRequest) (*Evidence, error) {
	ev, _, err := send[Evidence](ctx, cl, call{method: http.MethodPost, path: "/v1/evidence", body: r.body(""), key: r.IdempotencyKey})
	return ev, err
}

// Evidence answers one evidence (GET /v1/evidence/{id}).
func (cl *Client) Evidence(ctx context.Context, id string) (*Evidence, error) {
	ev, _, err := send[Evidence](ctx, cl, call{method: http.MethodGet, path: "/v1/evidence/" + url.PathEscape(id)})
	return ev, err
}

// ListEvidence answers a page of evidence in intake order (GET /v1/evidence).
func (cl *Client) ListEvidence(ctx context.Context, o ListOptions) (*EvidencePage, error) {
	p, _, err := send[EvidencePage](ctx, cl, call{method: http.MethodGet, path: "/v1/evidence", query: pageQuery("status", o.Status, o.Limit, o.Cursor)})
	return p, err
}

// Receipt answers a confirmed evidence's receipt (GET
// /v1/evidence/{id}/receipt); before, an *Error with code not_confirmed.
func (cl *Client) Receipt(ctx context.Context, id string) (*receipt.Receipt, error) {
	r, _, err := send[receipt.Receipt](ctx, cl, call{method: http.MethodGet, path: "/v1/evidence/" + url.PathEscape(id) + "/receipt"})
	return r, err
}

// RetryEvidence re-drives a dead-lettered evidence (POST
// /v1/evidence/{id}/retry); otherwise an *Error with code not_dead_lettered.
func (cl *Client) RetryEvidence(ctx context.Context, id string) (*Evidence, error) {
	ev, _, err := send[Evidence](ctx, cl, call{method: http.MethodPost, path: "/v1/evidence/" + url.PathEscape(id) + "/retry"})
	return ev, err
}

// WaitConfirmed asks for the evidence every interval until it is confirmed,
// and answers it then, receipt included. progress, when not nil, sees every
// answer. A dead-lettered evidence ends the wait with an error naming its
// last error; so does ctx. A 429 or 503 still answered after the client's
// retries (keeper or its store away for a while) does not: it asks again
// the next interval.
func (cl *Client) WaitConfirmed(ctx context.Context, id string, every time.Duration, progress func(*Evidence)) (*Evidence, error) {
	var last *Evidence
	for {
		ev, err := cl.Evidence(ctx, id)
		var e *Error
		switch {
		case err != nil && errors.As(err, &e) && (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests) && ctx.Err() == nil:
			// keeper (or its store) is away for longer than the retries: ask again next time
		case err != nil:
			return nil, err
		default:
			last = ev
			if progress != nil {
				progress(ev)
			}
			switch ev.Status {
			case StatusConfirmed:
				return ev, nil
			case StatusDeadLetter:
				return ev, fmt.Errorf("evidence %s was dead-lettered: %s", id, ev.LastError)
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				return nil, fmt.Errorf("evidence %s: %w (last answer: %v)", id, ctx.Err(), err)
			}
			return last, fmt.Errorf("evidence %s is still %s: %w", id, last.Status, ctx.Err())
		case <-t.C:
		}
	}
}
