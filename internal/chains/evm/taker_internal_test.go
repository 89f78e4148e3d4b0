package evm

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node that keeps no old state (most do) makes keeper find the transaction
// that took a nonce from block bodies. A block holds the signer's
// transactions in nonce order, so the one sought can come after a lower one.
func TestTheTransactionThatTookANonceIsFoundAfterALowerNonceInTheSameBlock(t *testing.T) {
	signer := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	other := common.HexToAddress("0x00000000000000000000000000000000000000bb")
	tx := func(from common.Address, nonce uint64, hash byte) map[string]any {
		return map[string]any{"hash": common.Hash{hash}, "from": from, "nonce": hexutil.EncodeUint64(nonce), "input": "0x"}
	}
	blocks := map[uint64][]map[string]any{
		9: {tx(signer, 7, 0x07)},
		8: {},
		7: {tx(other, 0, 0x99), tx(signer, 4, 0x04), tx(signer, 5, 0x05), tx(signer, 6, 0x06)},
		6: {tx(signer, 1, 0x01)},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var reqs []struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(body, &reqs))
		var out []map[string]any
		for _, q := range reqs {
			var tag string
			require.NoError(t, json.Unmarshal(q.Params[0], &tag))
			n, err := hexutil.DecodeUint64(tag)
			require.NoError(t, err)
			txs, ok := blocks[n]
			var res any
			if ok {
				res = map[string]any{"number": tag, "transactions": txs}
			}
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": q.ID, "result": res})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	rc, err := rpc.Dial(srv.URL)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	a := &Adapter{rc: rc, from: signer, log: slog.New(slog.DiscardHandler)}

	got, err := a.nonceTakerByBodies(context.Background(), 9, 5)
	require.NoError(t, err)
	assert.Equal(t, common.Hash{0x05}, got.Hash)

	_, err = a.nonceTakerByBodies(context.Background(), 9, 2)
	require.Error(t, err, "nonce 2 is in no block down to one with a lower nonce of the signer")
	assert.Contains(t, err.Error(), "no block from 9 back to 6")
}
