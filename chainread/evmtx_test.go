//go:build !js

package chainread_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
)

const etherlink = 42793

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := crypto.GenerateKey()
	require.NoError(t, err)
	return key
}

// signed signs data with key for chainID, as go-ethereum's latest signer
// does for its type.
func signed(t *testing.T, key *ecdsa.PrivateKey, chainID uint64, data types.TxData) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(new(big.Int).SetUint64(chainID)), data)
	require.NoError(t, err)
	return tx
}

// txJSON is tx as go-ethereum marshals it (the fields a node answers, less
// its block and sender).
func txJSON(t *testing.T, tx *types.Transaction) json.RawMessage {
	t.Helper()
	raw, err := tx.MarshalJSON()
	require.NoError(t, err)
	return raw
}

// withFields is the JSON object raw with fields set (a nil value deletes).
func withFields(t *testing.T, raw json.RawMessage, fields map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	for k, v := range fields {
		if v == nil {
			delete(m, k)
			continue
		}
		b, err := json.Marshal(v)
		require.NoError(t, err)
		m[k] = b
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func TestDecodeEVMTransactionRebuildsWhatGoEthereumSignedForEveryTypeKeeperReads(t *testing.T) {
	key := newKey(t)
	to := common.HexToAddress("0x00000000000000000000000000000000deadbeef")
	id := big.NewInt(etherlink)
	acl := types.AccessList{{Address: to, StorageKeys: []common.Hash{{1}, {2}}}, {Address: common.Address{9}, StorageKeys: []common.Hash{}}}
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	for name, data := range map[string]types.TxData{
		"legacy (EIP-155)":             &types.LegacyTx{Nonce: 7, GasPrice: big.NewInt(1e9), Gas: 100_000, To: &to, Value: big.NewInt(0), Data: []byte("keeper anchor")},
		"legacy contract creation":     &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(0), Gas: 1_000_000, Value: huge, Data: []byte{0x60, 0x00}},
		"EIP-2930 with an access list": &types.AccessListTx{ChainID: id, Nonce: 1 << 40, GasPrice: big.NewInt(3), Gas: 50_000, To: &to, Value: big.NewInt(1), AccessList: acl},
		"EIP-2930 without one":         &types.AccessListTx{ChainID: id, Nonce: 2, GasPrice: big.NewInt(3), Gas: 50_000, To: &to, Value: big.NewInt(1), Data: []byte{0}},
		"EIP-1559 anchor":              &types.DynamicFeeTx{ChainID: id, Nonce: 3, GasTipCap: big.NewInt(0), GasFeeCap: big.NewInt(100e9), Gas: 100_000, To: &to, Data: make([]byte, 200)},
		"EIP-1559 with an access list": &types.DynamicFeeTx{ChainID: id, Nonce: 4, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 100_000, To: &to, Value: huge, AccessList: acl},
	} {
		t.Run(name, func(t *testing.T) {
			tx := signed(t, key, etherlink, data)
			got, err := chainread.DecodeEVMTransaction(txJSON(t, tx), tx.Hash(), etherlink)
			require.NoError(t, err)
			sender, err := types.Sender(types.LatestSignerForChainID(id), tx)
			require.NoError(t, err)
			assert.Equal(t, [32]byte(tx.Hash()), got.Hash)
			assert.Equal(t, tx.Type(), got.Type)
			assert.Equal(t, uint64(etherlink), got.ChainID)
			assert.Equal(t, tx.Nonce(), got.Nonce)
			if tx.To() == nil {
				assert.Nil(t, got.To)
			} else {
				require.NotNil(t, got.To)
				assert.Equal(t, [20]byte(*tx.To()), *got.To)
			}
			assert.Equal(t, hexutil.Encode(tx.Data()), hexutil.Encode(got.Data))
			assert.Equal(t, [20]byte(sender), got.Sender)

			// A zero want skips the hash check, not the others.
			got, err = chainread.DecodeEVMTransaction(txJSON(t, tx), [32]byte{}, etherlink)
			require.NoError(t, err)
			assert.Equal(t, [20]byte(sender), got.Sender)
		})
	}
}

func TestDecodeEVMTransactionRefusesAnUnprotectedLegacyTransaction(t *testing.T) {
	to := common.Address{1}
	tx, err := types.SignTx(types.NewTx(&types.LegacyTx{Nonce: 1, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Value: big.NewInt(0)}), types.HomesteadSigner{}, newKey(t))
	require.NoError(t, err)
	v, _, _ := tx.RawSignatureValues()

	_, err = chainread.DecodeEVMTransaction(txJSON(t, tx), tx.Hash(), etherlink)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unprotected legacy transaction (v="+v.String()+") signs for no chain")
	assert.NotErrorIs(t, err, chainread.ErrMalformed, "the transaction is real, the rule refuses it")
}

func TestDecodeEVMTransactionRefusesATransactionSignedForAnotherChain(t *testing.T) {
	key, to := newKey(t), common.Address{1}
	for name, data := range map[string]types.TxData{
		"legacy":   &types.LegacyTx{Nonce: 1, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Value: big.NewInt(0)},
		"EIP-2930": &types.AccessListTx{ChainID: big.NewInt(1), Nonce: 1, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Value: big.NewInt(0)},
		"EIP-1559": &types.DynamicFeeTx{ChainID: big.NewInt(1), Nonce: 1, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1), Gas: 21000, To: &to},
	} {
		tx := signed(t, key, 1, data)
		_, err := chainread.DecodeEVMTransaction(txJSON(t, tx), tx.Hash(), etherlink)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "signed for chain id 1, the network's is 42793", name)
		assert.NotErrorIs(t, err, chainread.ErrMalformed, name)
	}
}

func TestDecodeEVMTransactionRefusesAnAnswerThatDoesNotHashToTheHashAsked(t *testing.T) {
	key, to := newKey(t), common.Address{1}
	legacy := signed(t, key, etherlink, &types.LegacyTx{Nonce: 5, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Value: big.NewInt(0), Data: []byte("root A")})
	dynamic := signed(t, key, etherlink, &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: 5, GasFeeCap: big.NewInt(1), Gas: 21000, To: &to, Data: []byte("root A")})
	other := signed(t, key, etherlink, &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: 6, GasFeeCap: big.NewInt(1), Gas: 21000, To: &to, Data: []byte("root B")})
	for _, tx := range []*types.Transaction{legacy, dynamic} {
		for name, change := range map[string]map[string]any{
			"calldata":  {"input": hexutil.Bytes("root B")},
			"nonce":     {"nonce": "0x6"},
			"recipient": {"to": common.Address{2}},
			"value":     {"value": "0x1"},
			"gas":       {"gas": "0x5209"},
		} {
			_, err := chainread.DecodeEVMTransaction(withFields(t, txJSON(t, tx), change), tx.Hash(), etherlink)
			assert.ErrorIs(t, err, chainread.ErrMalformed, "type %d, changed %s", tx.Type(), name)
		}
	}
	// Another transaction the same account signed, returned for this one.
	_, err := chainread.DecodeEVMTransaction(txJSON(t, other), dynamic.Hash(), etherlink)
	require.ErrorIs(t, err, chainread.ErrMalformed)
	assert.Contains(t, err.Error(), "hashes to "+other.Hash().Hex())
}

func TestDecodeEVMTransactionRefusesTypesItDoesNotRead(t *testing.T) {
	key, to := newKey(t), common.Address{1}
	id := uint256.NewInt(etherlink)
	blob := signed(t, key, etherlink, &types.BlobTx{ChainID: id, Nonce: 1, GasTipCap: uint256.NewInt(1), GasFeeCap: uint256.NewInt(1), Gas: 21000,
		To: to, BlobFeeCap: uint256.NewInt(1), BlobHashes: []common.Hash{{1}}})
	setCode := signed(t, key, etherlink, &types.SetCodeTx{ChainID: id, Nonce: 1, GasTipCap: uint256.NewInt(1), GasFeeCap: uint256.NewInt(1), Gas: 50000,
		To: to, AuthList: []types.SetCodeAuthorization{{ChainID: *id, Address: common.Address{3}, Nonce: 2}}})
	for _, tx := range []*types.Transaction{blob, setCode} {
		_, err := chainread.DecodeEVMTransaction(txJSON(t, tx), tx.Hash(), etherlink)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "transaction type "+big.NewInt(int64(tx.Type())).String()+" is not one keeper reads")
	}
	tx := signed(t, key, etherlink, &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: 1, GasFeeCap: big.NewInt(1), Gas: 21000, To: &to})
	_, err := chainread.DecodeEVMTransaction(withFields(t, txJSON(t, tx), map[string]any{"type": "0x7e"}), [32]byte{}, etherlink)
	assert.ErrorContains(t, err, "transaction type 126 is not one keeper reads")
}

func TestDecodeEVMTransactionRefusesASignatureWithAHighS(t *testing.T) {
	key, to := newKey(t), common.Address{1}
	tx := signed(t, key, etherlink, &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: 1, GasFeeCap: big.NewInt(1), Gas: 21000, To: &to})
	v, _, s := tx.RawSignatureValues()
	// (r, N−s) with the other parity is the same signature, malleated: it
	// recovers the same key, and EIP-2 forbids it.
	highS := new(big.Int).Sub(crypto.S256().Params().N, s)
	parity := hexutil.Uint64(1 - v.Uint64())
	raw := withFields(t, txJSON(t, tx), map[string]any{"s": (*hexutil.Big)(highS), "v": parity, "yParity": parity})
	_, err := chainread.DecodeEVMTransaction(raw, [32]byte{}, etherlink)
	assert.ErrorContains(t, err, "EIP-2")
}

func TestDecodeEVMTransactionRefusesAnswersMissingOrContradictingFields(t *testing.T) {
	key, to := newKey(t), common.Address{1}
	legacy := signed(t, key, etherlink, &types.LegacyTx{Nonce: 1, GasPrice: big.NewInt(1), Gas: 21000, To: &to, Value: big.NewInt(0)})
	dynamic := signed(t, key, etherlink, &types.DynamicFeeTx{ChainID: big.NewInt(etherlink), Nonce: 1, GasFeeCap: big.NewInt(1), Gas: 21000, To: &to})
	for name, c := range map[string]struct {
		tx     *types.Transaction
		change map[string]any
	}{
		"legacy without r":                  {legacy, map[string]any{"r": nil}},
		"legacy without gasPrice":           {legacy, map[string]any{"gasPrice": nil}},
		"legacy whose chainId is not v's":   {legacy, map[string]any{"chainId": "0x1"}},
		"EIP-1559 without input":            {dynamic, map[string]any{"input": nil}},
		"EIP-1559 without maxFeePerGas":     {dynamic, map[string]any{"maxFeePerGas": nil}},
		"EIP-1559 with v and yParity apart": {dynamic, map[string]any{"yParity": "0x5"}},
		"a nonce with leading zeros":        {dynamic, map[string]any{"nonce": "0x01"}},
		"a nonce without 0x":                {dynamic, map[string]any{"nonce": "1"}},
		"odd calldata":                      {dynamic, map[string]any{"input": "0xabc"}},
		"a short recipient":                 {dynamic, map[string]any{"to": "0x0102"}},
	} {
		_, err := chainread.DecodeEVMTransaction(withFields(t, txJSON(t, c.tx), c.change), c.tx.Hash(), etherlink)
		assert.ErrorIs(t, err, chainread.ErrMalformed, name)
	}
	_, err := chainread.DecodeEVMTransaction(json.RawMessage(`"0x1234"`), [32]byte{}, etherlink)
	assert.ErrorIs(t, err, chainread.ErrMalformed)
}
