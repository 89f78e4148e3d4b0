package client

import (
	"context"
	"net/http"
	"net/url"
)

// ComputeEpoch starts an epoch (POST /rewarder/epochs/{id}/compute). The
// same request again joins it; other inputs are an *Error with code
// epoch_conflict.
func (cl *Client) ComputeEpoch(ctx context.Context, id string, r EpochRequest) (*Manifest, error) {
	m, _, err := send[Manifest](ctx, cl, call{method: http.MethodPost, path: "/rewarder/epochs/" + url.PathEscape(id) + "/compute", body: r})
	return m, err
}

// Epoch answers an epoch's manifest (GET /rewarder/epochs/{id}).
func (cl *Client) Epoch(ctx context.Context, id string) (*Manifest, error) {
	m, _, err := send[Manifest](ctx, cl, call{method: http.MethodGet, path: "/rewarder/epochs/" + url.PathEscape(id)})
	return m, err
}
