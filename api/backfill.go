package api

// WalletRequest is the body of POST /v1/wallets (docs/backfill.md).
type WalletRequest struct {
	Address string `json:"address"`
	// Networks names the networks to scan; none (absent): every configured
	// network the address fits. An empty list is refused.
	Networks []string `json:"networks,omitempty"`
}

// Wallet is a wallet's backfill (GET /v1/wallets/{address}).
type Wallet struct {
	Address  string          `json:"address"`
	Status   string          `json:"status"` // PENDING, RUNNING, COMPLETED, FAILED, ABANDONED: the busiest of its networks'
	Done     bool            `json:"done"`   // nothing running or due to retry, and the balances recalculated
	Networks []WalletNetwork `json:"networks"`
	Balances []Balance       `json:"balances"`
	// Reconciled is true when every balance matches the chain, false when
	// one does not, nil when not finished or some balance could not be
	// checked.
	Reconciled *bool             `json:"reconciled"`
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
	NextRetryAt string         `json:"next_retry_at,omitempty"` // RFC 3339
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

// TransferPage is a page of a wallet's transfers (GET
// /v1/wallets/{address}/transfers).
type TransferPage struct {
	Items      []Transfer `json:"items"`
	NextCursor string     `json:"next_cursor"` // "" on the last page
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
