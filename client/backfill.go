package client

import (
	"context"
	"net/http"
	"net/url"
)

// AddWallet adds a wallet (POST /v1/wallets). It answers false when the
// wallet was already at work and nothing changed (200), true when its
// backfill was stored to start (202).
func (cl *Client) AddWallet(ctx context.Context, r WalletRequest) (*Wallet, bool, error) {
	w, status, err := send[Wallet](ctx, cl, call{method: http.MethodPost, path: "/v1/wallets", body: r})
	return w, status == http.StatusAccepted, err
}

// Wallet answers a wallet's backfill (GET /v1/wallets/{address}).
func (cl *Client) Wallet(ctx context.Context, address string) (*Wallet, error) {
	w, _, err := send[Wallet](ctx, cl, call{method: http.MethodGet, path: "/v1/wallets/" + url.PathEscape(address)})
	return w, err
}

// TransferOptions choose a page of a wallet's transfers.
type TransferOptions struct {
	Network string // only this network's
	Limit   int    // 0: the API's default (100)
	Cursor  string // the previous page's NextCursor
}

// Transfers answers a page of a wallet's transfers (GET
// /v1/wallets/{address}/transfers).
func (cl *Client) Transfers(ctx context.Context, address string, o TransferOptions) (*TransferPage, error) {
	path := "/v1/wallets/" + url.PathEscape(address) + "/transfers"
	p, _, err := send[TransferPage](ctx, cl, call{method: http.MethodGet, path: path, query: pageQuery("network", o.Network, o.Limit, o.Cursor)})
	return p, err
}
