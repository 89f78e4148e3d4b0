package verifypage_test

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/verifypage"
)

// TestThePageRehashesEveryEVMTransactionTypeAndRecoversItsSender signs a
// legacy (with and without EIP-155), an EIP-2930 and an EIP-1559
// transaction with go-ethereum, hands the page each as a node's
// eth_getTransactionByHash answers it, and compares the hash the page
// rebuilds and the sender it recovers with go-ethereum's; a changed field
// changes the hash.
func TestThePageRehashesEveryEVMTransactionTypeAndRecoversItsSender(t *testing.T) {
	browser := browsertest.Start(t)
	srv := httptest.NewServer(verifypage.Handler(nil))
	t.Cleanup(srv.Close)
	key, err := crypto.GenerateKey()
	require.NoError(t, err)
	from := crypto.PubkeyToAddress(key.PublicKey)
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	chainID := big.NewInt(42793)
	data := []byte("keeper:v3:" + strings.Repeat("\x01", 40+64)) // longer than 55 bytes: RLP's long form
	access := types.AccessList{{Address: to, StorageKeys: []common.Hash{common.HexToHash("0x01")}}}
	txs := map[string]*types.Transaction{}
	sign := func(name string, signer types.Signer, inner types.TxData) {
		tx, err := types.SignNewTx(key, signer, inner)
		require.NoError(t, err)
		txs[name] = tx
	}
	sign("legacy, before EIP-155", types.HomesteadSigner{}, &types.LegacyTx{Nonce: 7, GasPrice: big.NewInt(1e9), Gas: 50_000, To: &to, Value: big.NewInt(1), Data: data})
	sign("legacy, EIP-155", types.NewEIP155Signer(chainID), &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(1e9), Gas: 50_000, To: &to, Data: data})
	sign("EIP-2930", types.NewEIP2930Signer(chainID), &types.AccessListTx{ChainID: chainID, Nonce: 3, GasPrice: big.NewInt(2e9), Gas: 60_000, To: &to, Data: data, AccessList: access})
	sign("EIP-1559", types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID, Nonce: 300, GasTipCap: big.NewInt(1e9),
		GasFeeCap: big.NewInt(100e9), Gas: 100_000, To: &from, Data: data, AccessList: access})

	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(tab, 20*time.Second)
	defer cancelTimeout()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/verify")))
	rebuild := func(t *testing.T, tx map[string]any) map[string]string {
		raw, err := json.Marshal(tx)
		require.NoError(t, err)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`(() => { try { return evmSender(`+string(raw)+`); } catch (e) { return {error: e.message}; } })()`))
		require.NoError(t, err)
		return got
	}
	for name, tx := range txs {
		t.Run(name, func(t *testing.T) {
			raw, err := tx.MarshalJSON() // the fields as a node's JSON-RPC writes them
			require.NoError(t, err)
			var fields map[string]any
			require.NoError(t, json.Unmarshal(raw, &fields))
			fields["from"] = "0x00000000000000000000000000000000000000bb" // the node's word, which the page ignores
			got := rebuild(t, fields)
			assert.Equal(t, strings.ToLower(tx.Hash().Hex()), got["hash"], got["error"])
			assert.Equal(t, strings.ToLower(from.Hex()), got["sender"])

			fields["nonce"] = "0x1000"
			got = rebuild(t, fields)
			assert.NotEqual(t, strings.ToLower(tx.Hash().Hex()), got["hash"], "another nonce is another transaction")
		})
	}
}
