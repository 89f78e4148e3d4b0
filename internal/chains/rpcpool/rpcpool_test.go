package rpcpool_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// node is an EVM JSON-RPC endpoint served by go-ethereum's own RPC server:
// a head, receipts it knows, and the raw transactions it was sent.
type node struct {
	mu       sync.Mutex
	head     uint64
	receipts map[common.Hash]map[string]any
	sent     [][]byte
	calls    atomic.Int64
}

type ethAPI struct{ n *node }

func (e ethAPI) BlockNumber() hexutil.Uint64 {
	e.n.calls.Add(1)
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	return hexutil.Uint64(e.n.head)
}

func (e ethAPI) GetTransactionReceipt(h common.Hash) map[string]any {
	e.n.calls.Add(1)
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	return e.n.receipts[h]
}

func (e ethAPI) SendRawTransaction(raw hexutil.Bytes) common.Hash {
	e.n.calls.Add(1)
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	e.n.sent = append(e.n.sent, raw)
	return common.BytesToHash(raw)
}

func (e ethAPI) ChainId() hexutil.Uint64 { e.n.calls.Add(1); return 42793 }

func startNode(t *testing.T, head uint64) (*node, string) {
	t.Helper()
	n := &node{head: head, receipts: map[common.Hash]map[string]any{}}
	srv := rpc.NewServer()
	require.NoError(t, srv.RegisterName("eth", ethAPI{n}))
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Stop() })
	return n, hs.URL
}

func (n *node) setReceipt(h common.Hash, blockHash string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.receipts[h] = map[string]any{"transactionHash": h.Hex(), "blockHash": blockHash, "blockNumber": "0x10", "status": "0x1"}
}

func (n *node) sentCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.sent)
}

func dial(t *testing.T, p *rpcpool.Pool) *rpc.Client {
	t.Helper()
	c, err := rpc.DialOptions(context.Background(), p.Primary(), rpc.WithHTTPClient(&http.Client{Transport: p.Transport(http.DefaultTransport)}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func receiptOf(t *testing.T, c *rpc.Client, h common.Hash) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, c.CallContext(context.Background(), &out, "eth_getTransactionReceipt", h))
	return out
}

func TestReadsFailOverFromAnEndpointThatIsDownAndItShowsUnhealthy(t *testing.T) {
	_, up := startNode(t, 500)
	down := "http://" + testkit.ClosedAddr(t) + "/v1/secret-api-key"
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{down, up}})
	require.NoError(t, err)
	c := dial(t, p)

	var head hexutil.Uint64
	require.NoError(t, c.CallContext(context.Background(), &head, "eth_blockNumber"))
	assert.EqualValues(t, 500, head)

	st := p.Stats()
	assert.False(t, st[0].Healthy, "the endpoint that refuses connections")
	assert.Positive(t, st[0].Errors)
	assert.True(t, st[1].Healthy)
	assert.Equal(t, "http://"+strings.TrimPrefix(strings.Split(down, "/v1")[0], "http://")+"/…", st[0].Endpoint, "the label keeps the key in the path out")
}

func TestAnEndpointLaggingAHundredBlocksIsUnhealthyAndReadsGoToTheOther(t *testing.T) {
	lagging, lagURL := startNode(t, 400)
	current, curURL := startNode(t, 500)
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{lagURL, curURL}})
	require.NoError(t, err)
	c := dial(t, p)

	st := p.Stats()
	assert.False(t, st[0].Healthy)
	assert.EqualValues(t, 100, st[0].Lag)
	assert.True(t, st[1].Healthy)

	before := lagging.calls.Load()
	for range 5 {
		var head hexutil.Uint64
		require.NoError(t, c.CallContext(context.Background(), &head, "eth_blockNumber"))
		assert.EqualValues(t, 500, head)
	}
	assert.Equal(t, before, lagging.calls.Load(), "no read went to the lagging endpoint")
	assert.Positive(t, current.calls.Load())
}

func TestASignedTransactionIsBroadcastToEveryHealthyEndpoint(t *testing.T) {
	a, aURL := startNode(t, 10)
	b, bURL := startNode(t, 10)
	c3, cURL := startNode(t, 10)
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{aURL, bURL, cURL}})
	require.NoError(t, err)
	c := dial(t, p)

	var h common.Hash
	require.NoError(t, c.CallContext(context.Background(), &h, "eth_sendRawTransaction", hexutil.Bytes{0x02, 0xaa}))
	require.Eventually(t, func() bool { return a.sentCount() == 1 && b.sentCount() == 1 && c3.sentCount() == 1 },
		5*time.Second, 10*time.Millisecond, "each endpoint got the transaction once")
}

func TestAReceiptOnlyOneEndpointReportsConfirmsNothingUntilTheOthersAgree(t *testing.T) {
	liar, liarURL := startNode(t, 10)
	honest, honestURL := startNode(t, 10)
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{liarURL, honestURL}})
	require.NoError(t, err)
	c := dial(t, p)
	tx := common.HexToHash("0x01")

	liar.setReceipt(tx, "0xbad0000000000000000000000000000000000000000000000000000000000000")
	assert.Nil(t, receiptOf(t, c, tx), "an invented receipt is not passed on")
	assert.EqualValues(t, 1, p.Disagreements())

	honest.setReceipt(tx, "0x1111111111111111111111111111111111111111111111111111111111111111")
	assert.Nil(t, receiptOf(t, c, tx), "two different receipts are not passed on")

	liar.setReceipt(tx, "0x1111111111111111111111111111111111111111111111111111111111111111")
	got := receiptOf(t, c, tx)
	require.NotNil(t, got, "a receipt both report alike is passed on")
	assert.Equal(t, "0x1111111111111111111111111111111111111111111111111111111111111111", got["blockHash"])

	// A batch mixing receipts and other calls keeps the other answers.
	var head hexutil.Uint64
	var r1, r2 map[string]any
	require.NoError(t, c.BatchCallContext(context.Background(), []rpc.BatchElem{
		{Method: "eth_getTransactionReceipt", Args: []any{tx}, Result: &r1},
		{Method: "eth_getTransactionReceipt", Args: []any{common.HexToHash("0x02")}, Result: &r2},
		{Method: "eth_blockNumber", Result: &head},
	}))
	assert.NotNil(t, r1)
	assert.Nil(t, r2)
	assert.EqualValues(t, 10, head)
}

func TestOnlyTheTrustedEndpointCanConfirmAReceipt(t *testing.T) {
	liar, liarURL := startNode(t, 10)
	_, trustedURL := startNode(t, 10)
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{liarURL, trustedURL}, Trust: []int{2}})
	require.NoError(t, err)
	c := dial(t, p)
	tx := common.HexToHash("0x03")
	liar.setReceipt(tx, "0xbad0000000000000000000000000000000000000000000000000000000000000")
	assert.Nil(t, receiptOf(t, c, tx))

	_, err = rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{liarURL, trustedURL}, Trust: []int{3}})
	require.ErrorContains(t, err, "trusted endpoint 3 is not in the list of 2")
}

func TestAnErrorNamesTheEndpointButNeverItsKey(t *testing.T) {
	second := strings.Replace("http://"+testkit.ClosedAddr(t)+"/v1/secret-api-key", "secret-api-key", "second-key", 1)
	p, err := rpcpool.New(rpcpool.EVM, rpcpool.Options{URLs: []string{"http://" + testkit.ClosedAddr(t) + "/v1/secret-api-key", second}, Timeout: time.Second})
	require.NoError(t, err)
	c := dial(t, p)
	var head hexutil.Uint64
	err = c.CallContext(context.Background(), &head, "eth_blockNumber")
	require.Error(t, err)
	// The client's own error names the URL it dialled (the adapters scrub
	// it); what the pool adds names endpoints by position and host only.
	assert.Contains(t, err.Error(), "etherlink endpoint 2 (http://")
	assert.NotContains(t, err.Error(), "second-key")
}

// solanaNode answers getSlot and getSignatureStatuses with a fixed value.
func solanaNode(t *testing.T, slot uint64, statuses string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&c))
		result := statuses
		if c.Method == "getSlot" {
			result, _ = func() (string, error) { b, err := json.Marshal(slot); return string(b), err }()
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(c.ID) + `,"result":` + result + `}`))
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestSignatureStatusesKeepTheLowestConfirmationAndOnlyWhatAllEndpointsSee(t *testing.T) {
	a := solanaNode(t, 1000, `{"context":{"slot":1000},"value":[{"slot":7,"confirmations":null,"err":null,"confirmationStatus":"finalized"},{"slot":8,"confirmations":1,"err":null,"confirmationStatus":"confirmed"},{"slot":9,"err":null,"confirmationStatus":"finalized"}]}`)
	b := solanaNode(t, 1001, `{"context":{"slot":1001},"value":[{"slot":7,"confirmations":3,"err":null,"confirmationStatus":"confirmed"},null,{"slot":10,"err":null,"confirmationStatus":"finalized"}]}`)
	p, err := rpcpool.New(rpcpool.Solana, rpcpool.Options{URLs: []string{a, b}})
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: p.Transport(http.DefaultTransport)}).Post(p.Primary(), "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"getSignatureStatuses","params":[["s1","s2","s3"]]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var got struct {
		Result struct {
			Value []*struct {
				Slot               uint64 `json:"slot"`
				ConfirmationStatus string `json:"confirmationStatus"`
			} `json:"value"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Len(t, got.Result.Value, 3)
	require.NotNil(t, got.Result.Value[0])
	assert.Equal(t, "confirmed", got.Result.Value[0].ConfirmationStatus, "the lower of finalized and confirmed")
	assert.Nil(t, got.Result.Value[1], "seen by one endpoint only")
	assert.Nil(t, got.Result.Value[2], "reported in different slots")
	assert.EqualValues(t, 1, p.Disagreements())
}
