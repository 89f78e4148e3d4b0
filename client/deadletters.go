package client

import (
	"context"
	"net/http"
	"time"

	"github.com/keeperhq/keeper/api"
)

// RedriveRequest says which dead-lettered evidence to put back. Each field
// set narrows the selection; the zero request selects every dead-lettered
// evidence. It is sent as the API's body, api.RedriveRequest, its times in
// RFC 3339.
type RedriveRequest struct {
	Chain  string    // only anchors on this chain
	Batch  int64     // only the anchors of this batch
	Since  time.Time // only batches dead-lettered at or after
	Until  time.Time // only batches dead-lettered before
	DryRun bool      // answer what would be re-driven, change nothing
}

// body is r as the API takes it.
func (r RedriveRequest) body() api.RedriveRequest {
	return api.RedriveRequest{Chain: r.Chain, Batch: r.Batch, Since: rfc3339(r.Since), Until: rfc3339(r.Until), DryRun: r.DryRun}
}

// rfc3339 is t as the API reads a time, "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// Redrive re-drives dead-lettered evidence in bulk (POST
// /v1/dead-letters/redrive), or with DryRun says what it would. Running it
// again after it succeeded re-drives nothing.
func (cl *Client) Redrive(ctx context.Context, r RedriveRequest) (*RedriveResult, error) {
	res, _, err := send[RedriveResult](ctx, cl, call{method: http.MethodPost, path: "/v1/dead-letters/redrive", body: r.body()})
	return res, err
}
