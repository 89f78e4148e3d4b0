//go:build !js

package chainread_test

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
)

func u64(x uint64) *uint64 { return &x }

// headers are go-ethereum headers of each fork's shape, every field set.
func headers() map[string]*types.Header {
	base := func() *types.Header {
		return &types.Header{
			ParentHash: common.Hash{1}, UncleHash: types.EmptyUncleHash, Coinbase: common.Address{2}, Root: common.Hash{3},
			TxHash: common.Hash{4}, ReceiptHash: common.Hash{5}, Bloom: types.Bloom{6, 255: 7}, Difficulty: big.NewInt(131072),
			Number: big.NewInt(8_000_000), GasLimit: 30_000_000, GasUsed: 21_000, Time: 1_750_000_000, Extra: []byte("keeper"),
			MixDigest: common.Hash{8}, Nonce: types.EncodeNonce(0x0102030405060708),
		}
	}
	frontier := base()
	london := base()
	london.BaseFee = big.NewInt(1_000_000_007)
	shanghai := base()
	shanghai.BaseFee, shanghai.WithdrawalsHash = big.NewInt(0), &common.Hash{9}
	cancun := base()
	cancun.Difficulty = big.NewInt(0)
	cancun.BaseFee, cancun.WithdrawalsHash, cancun.BlobGasUsed, cancun.ExcessBlobGas, cancun.ParentBeaconRoot =
		big.NewInt(7), &types.EmptyWithdrawalsHash, u64(131072), u64(0), &common.Hash{10}
	prague := types.CopyHeader(cancun)
	prague.RequestsHash = &types.EmptyRequestsHash
	amsterdam := types.CopyHeader(prague)
	amsterdam.BlockAccessListHash, amsterdam.SlotNumber = &common.Hash{11}, u64(12345)
	return map[string]*types.Header{"frontier": frontier, "london": london, "shanghai": shanghai, "cancun": cancun, "prague": prague, "amsterdam": amsterdam}
}

func headerJSON(t *testing.T, h *types.Header) json.RawMessage {
	t.Helper()
	raw, err := h.MarshalJSON()
	require.NoError(t, err)
	return raw
}

func TestDecodeEVMHeaderRehashesTheHeaderOfEveryFork(t *testing.T) {
	for fork, h := range headers() {
		got, err := chainread.DecodeEVMHeader(headerJSON(t, h))
		require.NoError(t, err, fork)
		assert.Equal(t, chainread.EVMHeader{Hash: h.Hash(), ParentHash: h.ParentHash, Number: h.Number.Uint64(), Time: h.Time}, got, fork)
	}
}

func TestDecodeEVMHeaderRefusesAHeaderWhoseFieldsWereChanged(t *testing.T) {
	h := headers()["prague"]
	for field, v := range map[string]any{
		"timestamp":     "0x684ee181",
		"number":        "0x7a1201",
		"parentHash":    common.Hash{99},
		"extraData":     "0x",
		"requestsHash":  common.Hash{99},
		"baseFeePerGas": "0x8",
	} {
		_, err := chainread.DecodeEVMHeader(withFields(t, headerJSON(t, h), map[string]any{field: v}))
		assert.ErrorIs(t, err, chainread.ErrHeaderHash, field)
		assert.ErrorIs(t, err, chainread.ErrMalformed, field)
	}
	// A fork field added to, or dropped from, the last fork's.
	_, err := chainread.DecodeEVMHeader(withFields(t, headerJSON(t, h), map[string]any{"blockAccessListHash": common.Hash{1}}))
	assert.ErrorIs(t, err, chainread.ErrHeaderHash)
	_, err = chainread.DecodeEVMHeader(withFields(t, headerJSON(t, h), map[string]any{"requestsHash": nil}))
	assert.ErrorIs(t, err, chainread.ErrHeaderHash)
}

func TestDecodeEVMHeaderRefusesAnAnswerThatIsNotAHeader(t *testing.T) {
	h := headers()["cancun"]
	for name, change := range map[string]map[string]any{
		"without its hash":                {"hash": nil},
		"without its timestamp":           {"timestamp": nil},
		"without its nonce":               {"nonce": nil},
		"a short logsBloom":               {"logsBloom": "0x00"},
		"a fork field after one left out": {"withdrawalsRoot": nil},
		"a timestamp over 64 bits":        {"timestamp": "0x10000000000000000"},
		"a hash that is no hash":          {"hash": "0x1234"},
	} {
		_, err := chainread.DecodeEVMHeader(withFields(t, headerJSON(t, h), change))
		assert.ErrorIs(t, err, chainread.ErrMalformed, name)
		assert.NotErrorIs(t, err, chainread.ErrHeaderHash, name)
	}
}
