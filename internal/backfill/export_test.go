package backfill

import (
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// What the tests of package backfill_test reach inside.
var (
	ChunkRecord    = chunkRecord
	TransferOf     = transferOf
	HoldingRecords = holdingRecords
)

// DecodeWallet parses and validates a POST /v1/wallets body.
func (h *HTTP) DecodeWallet(body []byte) (string, []store.NetworkStart, *httpapi.Error) {
	return h.decodeWallet(body)
}

// Network is the configured network of that name.
func (h *HTTP) Network(name string) (Network, bool) { return h.network(name) }
