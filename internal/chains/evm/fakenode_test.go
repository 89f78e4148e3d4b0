package evm_test

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
)

// fakeNode is a scripted JSON-RPC node for states a real dev chain cannot be
// steered into on demand: a reverted anchor, a receipt whose block was
// reorganised away between lookups.
type fakeNode struct {
	mu        sync.Mutex
	latest    uint64
	finalized uint64
	receipts  map[common.Hash]map[string]any
	canonical map[uint64]common.Hash // block hash at a height; default: hashAt(height)
}

func hashAt(n uint64) common.Hash { return common.BigToHash(new(big.Int).SetUint64(n + 0xb10c)) }

func (f *fakeNode) answer(method string, params []json.RawMessage) (any, *struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	header := func(n uint64) map[string]any {
		h, ok := f.canonical[n]
		if !ok {
			h = hashAt(n)
		}
		return map[string]any{"number": hexutil.EncodeUint64(n), "hash": h, "timestamp": hexutil.EncodeUint64(1_700_000_000 + n), "baseFeePerGas": "0x7"}
	}
	switch method {
	case "eth_chainId":
		return "0xa729", nil
	case "eth_blockNumber":
		return hexutil.EncodeUint64(f.latest), nil
	case "eth_getBlockByNumber":
		var tag string
		_ = json.Unmarshal(params[0], &tag)
		switch tag {
		case "latest":
			return header(f.latest), nil
		case "finalized":
			return header(f.finalized), nil
		}
		n, err := hexutil.DecodeUint64(tag)
		if err != nil || n > f.latest {
			return nil, nil
		}
		return header(n), nil
	case "eth_getTransactionReceipt":
		var h common.Hash
		_ = json.Unmarshal(params[0], &h)
		if r, ok := f.receipts[h]; ok {
			return r, nil
		}
		return nil, nil
	}
	return nil, &struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{-32601, "the method " + method + " does not exist/is not available"}
}

func (f *fakeNode) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		type req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		one := func(q req) map[string]any {
			res, rerr := f.answer(q.Method, q.Params)
			out := map[string]any{"jsonrpc": "2.0", "id": q.ID}
			if rerr != nil {
				out["error"] = rerr
			} else {
				out["result"] = res
			}
			return out
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
			var qs []req
			require.NoError(t, json.Unmarshal(body, &qs))
			var outs []map[string]any
			for _, q := range qs {
				outs = append(outs, one(q))
			}
			_ = json.NewEncoder(w).Encode(outs)
			return
		}
		var q req
		require.NoError(t, json.Unmarshal(body, &q))
		_ = json.NewEncoder(w).Encode(one(q))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// journalWith returns a journal holding one signed (never broadcast) anchor for batch 1.
func journalWith(t *testing.T) (*chaintest.Journal, common.Hash) {
	t.Helper()
	key := mustKey(t)
	to := common.Address{1}
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(new(big.Int).SetUint64(42793)), &types.DynamicFeeTx{
		ChainID: new(big.Int).SetUint64(42793), Nonce: 0, GasTipCap: new(big.Int).SetUint64(1), GasFeeCap: new(big.Int).SetUint64(10), Gas: 30000, To: &to, Data: evm.Payload(randomRoot(t)),
	})
	raw, err := tx.MarshalBinary()
	require.NoError(t, err)
	j := chaintest.NewJournal()
	require.NoError(t, j.SaveTransaction(context.Background(), chains.TxRecord{BatchID: 1, Chain: evm.Name, Ref: tx.Hash().Hex(), Raw: raw, CreatedAt: time.Now()}))
	return j, tx.Hash()
}

func fakeAdapter(t *testing.T, url string) *evm.Adapter {
	t.Helper()
	a, err := evm.New(context.Background(), evm.Config{RPCURL: url, Key: mustKey(t), PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

func TestARevertedAnchorIsReportedFailed(t *testing.T) {
	j, h := journalWith(t)
	node := &fakeNode{latest: 100, finalized: 90, receipts: map[common.Hash]map[string]any{
		h: {"transactionHash": h, "blockHash": hashAt(50), "blockNumber": "0x32", "status": "0x0"},
	}}
	a := fakeAdapter(t, node.serve(t))
	st := waitState(t, a, j, 1, chains.Failed, 3*time.Second)
	assert.Equal(t, h.Hex(), st.Ref)
	assert.Equal(t, uint64(50), st.Block)
	assert.Contains(t, st.Detail, "reverted")
}

func TestAReceiptFromABlockThatIsNoLongerCanonicalIsNeverFinal(t *testing.T) {
	j, h := journalWith(t)
	stale := common.HexToHash("0xdead")
	node := &fakeNode{latest: 100, finalized: 90, receipts: map[common.Hash]map[string]any{
		// The node still serves a receipt naming a block that lost the fork at height 50.
		h: {"transactionHash": h, "blockHash": stale, "blockNumber": "0x32", "status": "0x1"},
	}}
	a := fakeAdapter(t, node.serve(t))
	for range 5 {
		st, err := a.Status(context.Background(), 1, j)
		require.NoError(t, err)
		assert.Equal(t, chains.Pending, st.State, "block 50 is below finalized 90, but not the receipt's block")
	}
	st, err := a.Status(context.Background(), 1, j)
	require.NoError(t, err)
	assert.Contains(t, st.Detail, "reorganised")

	node.mu.Lock()
	node.canonical = map[uint64]common.Hash{50: stale} // the receipt's block is canonical after all
	node.mu.Unlock()
	st = waitState(t, a, j, 1, chains.Final, 3*time.Second)
	assert.Equal(t, uint64(50), st.Block)
	assert.Equal(t, time.Unix(1_700_000_050, 0).UTC(), st.BlockTime)
}

func TestTheFinalizedBlockMovingWithoutANewHeadMakesAnAnchorFinalAtOnce(t *testing.T) {
	j, h := journalWith(t)
	node := &fakeNode{latest: 100, finalized: 40, receipts: map[common.Hash]map[string]any{
		h: {"transactionHash": h, "blockHash": hashAt(50), "blockNumber": "0x32", "status": "0x1"},
	}}
	// No round on the poll interval: only what a head probe sees move starts one.
	a, err := evm.New(context.Background(), evm.Config{RPCURL: node.serve(t), Key: mustKey(t), PollInterval: time.Hour, HeadInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := a.Status(ctx, 1, j)
	require.NoError(t, err)
	require.Equal(t, chains.Pending, st.State, "block 50 is above the finalized block 40")

	// A node may move `finalized` a moment after it shows the block that
	// moves it: the head stays at 100.
	node.mu.Lock()
	node.finalized = 60
	node.mu.Unlock()
	st, err = a.Status(ctx, 1, j)
	require.NoError(t, err, "no status round started when only the finalized block moved")
	assert.Equal(t, chains.Final, st.State, st.Detail)
	assert.Equal(t, uint64(50), st.Block)
}
