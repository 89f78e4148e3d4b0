package client

import (
	"context"
	"net/http"
	"net/url"
)

// WalletRequest is the body of POST /v1/wallets.
type WalletRequest struct {
	Address  string   `json:"address"`
	Networks []string `json:"networks,omitempty"` // none: every configured network the address fits
}

// Wallet is a wallet's backfill.
type Wallet struct {
	Address    string            `json:"address"`
	Status     string            `json:"status"` // PENDING, RUNNING, COMPLETED, FAILED, ABANDONED
	Done       bool              `json:"done"`
	Networks   []WalletNetwork   `json:"networks"`
	Balances   []Balance         `json:"balances"`
	Reconciled *bool             `json:"reconciled"` // nil: not finished, or not checked
	Links      map[string]string `json:"links"`
}

// WalletNetwork is a wallet's backfill on one network.
type WalletNetwork struct {
	Network     string         `json:"network"`
	Status      string         `json:"status"`
	Progress    Progress       `json:"progress"`
	Checkpoint  map[string]any `json:"checkpoint"` // {"block"} or {"slot", "signature"}
	Transfers   int            `json:"transfers"`
	Attempts    int            `json:"attempts"`
	RetryCount  int            `json:"retry_count"`
	NextRetryAt string         `json:"next_retry_at,omitempty"`
	LastError   string         `json:"last_error,omitempty"`
	StartedAt   string         `json:"started_at,omitempty"`
	FinishedAt  string         `json:"finished_at,omitempty"`
	UpdatedAt   string         `json:"updated_at"`
}

// Progress is how far a network's scan is.
type Progress struct {
	Unit    string  `json:"unit"` // blocks or signatures
	Scanned uint64  `json:"scanned"`
	Total   uint64  `json:"total"`
	Percent float64 `json:"percent"`
	Start   uint64  `json:"start"`
	Target  uint64  `json:"target,omitempty"`
}

// Balance is a wallet's balance of one asset on one network.
type Balance struct {
	Network    string `json:"network"`
	Asset      string `json:"asset"`
	Balance    string `json:"balance"`
	Chain      string `json:"chain_balance,omitempty"`
	At         uint64 `json:"at,omitempty"`
	Opening    string `json:"opening_balance"`
	Reconciled *bool  `json:"reconciled"`
	Detail     string `json:"detail,omitempty"`
	// Stale: the network went back to work (re-added, or scanned again and
	// not yet recalculated, or waiting for a retry) since Balance was
	// computed; Balance is its last computed value.
	Stale      bool   `json:"stale"`
	ComputedAt string `json:"computed_at,omitempty"` // when Balance was computed (RFC 3339)
}

// TransferPage is a page of a wallet's transfers.
type TransferPage struct {
	Items      []Transfer `json:"items"`
	NextCursor string     `json:"next_cursor"`
}

// Transfer is one stored transfer.
type Transfer struct {
	Network   string `json:"network"`
	Tx        string `json:"tx"`
	Kind      string `json:"kind"` // native, token or fee
	Index     int    `json:"index"`
	Asset     string `json:"asset"`
	From      string `json:"from"`
	To        string `json:"to"`
	Amount    string `json:"amount"`
	Direction string `json:"direction"` // in, out or self
	Class     string `json:"class,omitempty"`
	Block     uint64 `json:"block"`
	BlockTime string `json:"block_time,omitempty"`
}

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
