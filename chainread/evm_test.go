//go:build !js

package chainread_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/internal/dev/devchain"
)

// node is a devchain with a funded key, go-ethereum's client of it and
// chainread's.
type node struct {
	chain *devchain.Chain
	key   *ecdsa.PrivateKey
	from  common.Address
	ec    *ethclient.Client
	rc    *rpc.Client
	c     chainread.Caller
}

func startNode(t *testing.T) *node {
	t.Helper()
	key := newKey(t)
	from := crypto.PubkeyToAddress(key.PublicKey)
	chain, err := devchain.Start(t.Context(), devchain.Options{Dir: t.TempDir(), ChainID: etherlink, BlockTime: 50 * time.Millisecond, FinalityDepth: 3,
		Fund: []common.Address{from}, AheadOfClock: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = chain.Stop() })
	rc, err := rpc.Dial(chain.URL())
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return &node{chain: chain, key: key, from: from, ec: ethclient.NewClient(rc), rc: rc, c: chainread.HTTP(chain.URL(), nil)}
}

// send signs data (its nonce the account's pending one) and sends it.
func (n *node) send(t *testing.T, data func(nonce uint64) types.TxData) *types.Transaction {
	t.Helper()
	nonce, err := n.ec.PendingNonceAt(t.Context(), n.from)
	require.NoError(t, err)
	tx := signed(t, n.key, etherlink, data(nonce))
	require.NoError(t, n.ec.SendTransaction(t.Context(), tx))
	return tx
}

// anchor is what keeper sends: a 0-value EIP-1559 transaction to itself
// carrying data.
func (n *node) anchor(data []byte) func(uint64) types.TxData {
	return func(nonce uint64) types.TxData {
		return &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: nonce, GasFeeCap: big.NewInt(100e9), Gas: 100_000, To: &n.from, Data: data}
	}
}

// waitFor asks EVM about h until done says its answer will do.
func waitFor(t *testing.T, c chainread.Caller, h common.Hash, done func(chainread.Tx) bool) chainread.Tx {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := chainread.EVM(t.Context(), c, h)
		require.NoError(t, err)
		if done(got) {
			return got
		}
		require.True(t, time.Now().Before(deadline), "still %s", got.Detail)
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func final(tx chainread.Tx) bool { return tx.Final }

func TestEVMReadsAnAnchorOnARealNodeAsGoEthereumDoes(t *testing.T) {
	n := startNode(t)
	payload := []byte("keeper:v1:checkpoint 7 root 0xabc")
	tx := n.send(t, n.anchor(payload))

	got := waitFor(t, n.c, tx.Hash(), final)

	rcpt, err := n.ec.TransactionReceipt(t.Context(), tx.Hash())
	require.NoError(t, err)
	header, err := n.ec.HeaderByHash(t.Context(), rcpt.BlockHash)
	require.NoError(t, err)
	fin, err := n.ec.HeaderByNumber(t.Context(), big.NewInt(int64(rpc.FinalizedBlockNumber)))
	require.NoError(t, err)
	assert.LessOrEqual(t, got.Block, fin.Number.Uint64())
	assert.Regexp(t, fmt.Sprintf(`^final: block %d is at or below the finalized block \d+$`, got.Block), got.Detail)
	assert.Equal(t, chainread.Tx{
		Network: "eip155:42793", Found: true, Succeeded: true, Final: true,
		Sender: n.from.Hex(), Nonce: tx.Nonce(), Payloads: [][]byte{payload},
		Block: rcpt.BlockNumber.Uint64(), BlockHash: rcpt.BlockHash.Hex(), BlockTime: time.Unix(int64(header.Time), 0).UTC(),
		Detail: got.Detail,
	}, got)
}

func TestDecodeEVMTransactionReadsEveryTypeAsARealNodeAnswersIt(t *testing.T) {
	n := startNode(t)
	to := common.Address{7}
	acl := types.AccessList{{Address: to, StorageKeys: []common.Hash{{1}}}}
	txs := []*types.Transaction{
		n.send(t, func(nonce uint64) types.TxData {
			return &types.LegacyTx{Nonce: nonce, GasPrice: big.NewInt(10e9), Gas: 100_000, To: &to, Value: big.NewInt(1), Data: []byte("legacy")}
		}),
		n.send(t, func(nonce uint64) types.TxData {
			return &types.AccessListTx{ChainID: big.NewInt(etherlink), Nonce: nonce, GasPrice: big.NewInt(10e9), Gas: 100_000, To: &to, Data: []byte("2930"), AccessList: acl}
		}),
		n.send(t, func(nonce uint64) types.TxData {
			return &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: nonce, GasFeeCap: big.NewInt(10e9), Gas: 100_000, To: &to, Data: []byte("1559"), AccessList: acl}
		}),
	}
	var last chainread.Tx
	for _, tx := range txs {
		last = waitFor(t, n.c, tx.Hash(), func(got chainread.Tx) bool { return got.Block > 0 })
		assert.Equal(t, n.from.Hex(), last.Sender, "type %d", tx.Type())
		assert.Equal(t, [][]byte{tx.Data()}, last.Payloads, "type %d", tx.Type())
	}
	// The same transactions, as elements of a full block.
	var block struct {
		Transactions []json.RawMessage `json:"transactions"`
	}
	require.NoError(t, n.rc.CallContext(t.Context(), &block, "eth_getBlockByNumber", hexutil.EncodeUint64(last.Block), true))
	require.NotEmpty(t, block.Transactions)
	for _, raw := range block.Transactions {
		var h struct{ Hash common.Hash }
		require.NoError(t, json.Unmarshal(raw, &h))
		got, err := chainread.DecodeEVMTransaction(raw, h.Hash, etherlink)
		require.NoError(t, err)
		assert.Equal(t, [20]byte(n.from), got.Sender)
	}
}

func TestDecodeEVMHeaderRehashesARealNodesBlocks(t *testing.T) {
	n := startNode(t)
	tx := n.send(t, n.anchor([]byte("x")))
	got := waitFor(t, n.c, tx.Hash(), func(got chainread.Tx) bool { return got.Block > 0 })

	for _, full := range []bool{false, true} {
		var raw json.RawMessage
		require.NoError(t, n.rc.CallContext(t.Context(), &raw, "eth_getBlockByNumber", hexutil.EncodeUint64(got.Block), full))
		h, err := chainread.DecodeEVMHeader(raw)
		require.NoError(t, err)
		want, err := n.ec.HeaderByNumber(t.Context(), new(big.Int).SetUint64(got.Block))
		require.NoError(t, err)
		assert.Equal(t, chainread.EVMHeader{Hash: want.Hash(), ParentHash: want.ParentHash, Number: got.Block, Time: want.Time}, h)

		_, err = chainread.DecodeEVMHeader(withFields(t, raw, map[string]any{"timestamp": hexutil.Uint64(want.Time + 1)}))
		assert.ErrorIs(t, err, chainread.ErrHeaderHash)
	}
}

func TestEVMSaysWhyATransactionIsNotFinal(t *testing.T) {
	n := startNode(t)

	unknown := common.Hash{0xee}
	got, err := chainread.EVM(t.Context(), n.c, unknown)
	require.NoError(t, err)
	assert.Equal(t, chainread.Tx{Network: "eip155:42793", Detail: "transaction " + unknown.Hex() + " is not known to the node"}, got)

	// Init code that reverts: PUSH1 0, PUSH1 0, REVERT.
	reverted := n.send(t, func(nonce uint64) types.TxData {
		return &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: nonce, GasFeeCap: big.NewInt(100e9), Gas: 100_000, Data: []byte{0x60, 0, 0x60, 0, 0xfd}}
	})
	got = waitFor(t, n.c, reverted.Hash(), func(got chainread.Tx) bool { return got.Block > 0 })
	assert.True(t, got.Found)
	assert.False(t, got.Succeeded)
	assert.False(t, got.Final)
	assert.Equal(t, fmt.Sprintf("reverted (receipt status 0) in block %d", got.Block), got.Detail)

	n.chain.PauseMining()
	pending := n.send(t, n.anchor([]byte("pending")))
	got, err = chainread.EVM(t.Context(), n.c, pending.Hash())
	require.NoError(t, err)
	assert.True(t, got.Found)
	assert.Equal(t, "pending: not yet included in a block", got.Detail)
	assert.Equal(t, uint64(0), got.Block)
	assert.Equal(t, [][]byte{[]byte("pending")}, got.Payloads)
}

// intercept is c, with the answers of method (whose first parameter
// satisfies match) replaced by edit's.
func intercept(c chainread.Caller, method string, match func(params []any) bool, edit func(raw json.RawMessage) (json.RawMessage, error)) chainread.Caller {
	return chainread.CallerFunc(func(ctx context.Context, m string, params ...any) (json.RawMessage, error) {
		raw, err := c.Call(ctx, m, params...)
		if err != nil || m != method || !match(params) {
			return raw, err
		}
		return edit(raw)
	})
}

func tag(name string) func([]any) bool {
	return func(params []any) bool { return len(params) > 0 && params[0] == name }
}

func anyParams([]any) bool { return true }

func TestEVMCountsConfirmationsOnANodeWithoutTheFinalizedTag(t *testing.T) {
	n := startNode(t)
	tx := n.send(t, n.anchor([]byte("x")))
	waitFor(t, n.c, tx.Hash(), final)

	for name, answer := range map[string]func(json.RawMessage) (json.RawMessage, error){
		"an RPC error": func(json.RawMessage) (json.RawMessage, error) {
			return nil, &chainread.RPCError{Code: -32602, Message: "invalid block tag finalized"}
		},
		"null": func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage("null"), nil },
	} {
		got, err := chainread.EVM(t.Context(), intercept(n.c, "eth_getBlockByNumber", tag("finalized"), answer), tx.Hash())
		require.NoError(t, err, name)
		latest, err := n.ec.BlockNumber(t.Context())
		require.NoError(t, err)
		assert.False(t, got.Final, name)
		assert.True(t, got.Succeeded, name)
		m := regexp.MustCompile(`^included in block (\d+), (\d+) of 64 confirmations \(node has no finalized block tag\)$`).FindStringSubmatch(got.Detail)
		require.NotNil(t, m, got.Detail)
		depth, err := strconv.ParseUint(m[2], 10, 64)
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatUint(got.Block, 10), m[1], name)
		// Final at the node's finalized block, three deep; latest asked after.
		assert.GreaterOrEqual(t, depth, uint64(3), name)
		assert.LessOrEqual(t, depth, latest-got.Block+1, name)
	}
	// A transport error is no missing tag.
	_, err := chainread.EVM(t.Context(), intercept(n.c, "eth_getBlockByNumber", tag("finalized"), func(json.RawMessage) (json.RawMessage, error) {
		return nil, fmt.Errorf("connection reset")
	}), tx.Hash())
	assert.ErrorContains(t, err, "etherlink: eth_getBlockByNumber finalized: connection reset")
}

func TestEVMRefusesANodeThatLies(t *testing.T) {
	n := startNode(t)
	tx := n.send(t, n.anchor([]byte("root A")))
	other := n.send(t, n.anchor([]byte("root B")))
	got := waitFor(t, n.c, tx.Hash(), final)
	waitFor(t, n.c, other.Hash(), final)
	block := hexutil.EncodeUint64(got.Block)

	// Another transaction of the same account for the one asked.
	var otherRaw json.RawMessage
	require.NoError(t, n.rc.CallContext(t.Context(), &otherRaw, "eth_getTransactionByHash", other.Hash()))
	_, err := chainread.EVM(t.Context(), intercept(n.c, "eth_getTransactionByHash", anyParams, func(json.RawMessage) (json.RawMessage, error) {
		return otherRaw, nil
	}), tx.Hash())
	assert.ErrorIs(t, err, chainread.ErrMalformed, "another transaction")

	// The block's time moved.
	_, err = chainread.EVM(t.Context(), intercept(n.c, "eth_getBlockByNumber", tag(block), func(raw json.RawMessage) (json.RawMessage, error) {
		var h struct{ Timestamp hexutil.Uint64 }
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, err
		}
		return withFields(t, raw, map[string]any{"timestamp": h.Timestamp - 3600}), nil
	}), tx.Hash())
	assert.ErrorIs(t, err, chainread.ErrHeaderHash, "a moved block time")

	// A finalized block that does not rehash.
	_, err = chainread.EVM(t.Context(), intercept(n.c, "eth_getBlockByNumber", tag("finalized"), func(raw json.RawMessage) (json.RawMessage, error) {
		return withFields(t, raw, map[string]any{"number": hexutil.Uint64(got.Block + 100)}), nil
	}), tx.Hash())
	assert.ErrorIs(t, err, chainread.ErrHeaderHash, "a finalized block moved up")

	// Another network's node.
	_, err = chainread.EVM(t.Context(), intercept(n.c, "eth_chainId", anyParams, func(json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"0x1"`), nil
	}), tx.Hash())
	assert.ErrorContains(t, err, "signed for chain id 42793, the network's is 1")

	// The block at the receipt's number is another block: a reorganisation.
	var parent json.RawMessage
	require.NoError(t, n.rc.CallContext(t.Context(), &parent, "eth_getBlockByNumber", hexutil.EncodeUint64(got.Block-1), false))
	reorg, err := chainread.EVM(t.Context(), intercept(n.c, "eth_getBlockByNumber", tag(block), func(json.RawMessage) (json.RawMessage, error) {
		return parent, nil
	}), tx.Hash())
	require.NoError(t, err)
	assert.False(t, reorg.Final)
	assert.True(t, reorg.BlockTime.IsZero())
	assert.Equal(t, fmt.Sprintf("included in block %d, which is being reorganised", got.Block), reorg.Detail)
}

func TestEVMNamesTheMethodThatFailed(t *testing.T) {
	for _, method := range []string{"eth_chainId", "eth_getTransactionByHash"} {
		c := chainread.CallerFunc(func(_ context.Context, m string, _ ...any) (json.RawMessage, error) {
			if m == method {
				return nil, &chainread.RPCError{Code: -32000, Message: "busy"}
			}
			return json.RawMessage(`"0xa729"`), nil
		})
		_, err := chainread.EVM(context.Background(), c, common.Hash{1})
		assert.EqualError(t, err, "etherlink: "+method+": JSON-RPC error -32000: busy")
	}
}

func TestEVMTransactionCountIsTheAccountsNonce(t *testing.T) {
	n := startNode(t)
	tx := n.send(t, n.anchor([]byte("x")))
	included := waitFor(t, n.c, tx.Hash(), func(got chainread.Tx) bool { return got.Block > 0 })
	// A node indexes a block's transactions a moment before it makes the
	// block its head; "latest" is the head's state.
	require.Eventually(t, func() bool {
		head, err := n.ec.BlockNumber(t.Context())
		return err == nil && head >= included.Block
	}, 30*time.Second, 10*time.Millisecond)
	for _, block := range []string{"latest", "pending"} {
		got, err := chainread.EVMTransactionCount(t.Context(), n.c, n.from, block)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), got, block)
	}
	got, err := chainread.EVMTransactionCount(t.Context(), n.c, n.from, "0x0")
	require.NoError(t, err)
	assert.Equal(t, uint64(0), got)
}

func TestEVMHashReadsTheReferencesKeeperWrites(t *testing.T) {
	h := common.HexToHash("0x2a3f6df050f9b78da2e0a3bf4c4e5cb14ce0b0a44c1fd2265700e93c20c4aa64")
	for _, ref := range []string{h.Hex(), strings.TrimPrefix(h.Hex(), "0x"), " etherlink:" + h.Hex() + "\n", strings.ToUpper(h.Hex()[2:])} {
		got, err := chainread.EVMHash(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, [32]byte(h), got, ref)
	}
	for _, ref := range []string{"", "0x", h.Hex()[:64], h.Hex() + "00", "solana:" + h.Hex(), "0x" + strings.Repeat("zz", 32)} {
		_, err := chainread.EVMHash(ref)
		assert.Error(t, err, ref)
	}
}

func TestChecksumAddressIsEIP55(t *testing.T) {
	// EIP-55's own examples.
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		a, err := chainread.ParseEVMAddress(strings.ToLower(want))
		require.NoError(t, err)
		assert.Equal(t, want, chainread.ChecksumAddress(a))
	}
	for range 100 {
		a := crypto.PubkeyToAddress(newKey(t).PublicKey)
		assert.Equal(t, a.Hex(), chainread.ChecksumAddress(a))
	}
}

func TestParseEVMAddressTakesZeroXHexInAnyCase(t *testing.T) {
	want := [20]byte(common.HexToAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"))
	for _, s := range []string{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0X5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED"} {
		got, err := chainread.ParseEVMAddress(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaedaa", "0xZaaeb6053f3e94c9b9a09f33669435e7ef1beaed", " 0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"} {
		_, err := chainread.ParseEVMAddress(s)
		assert.Error(t, err, s)
	}
}

func TestEVMNetworkIsCAIP2(t *testing.T) {
	assert.Equal(t, "eip155:42793", chainread.EVMNetwork(42793))
}
