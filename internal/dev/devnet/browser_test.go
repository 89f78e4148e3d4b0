package devnet

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The /verify page calls the devnet from a browser: a cross-origin POST of
// JSON, which the browser sends only after an OPTIONS preflight.

func TestAPreflightFromAnyOriginIsAllowed(t *testing.T) {
	d, _ := startPaused(t, Options{})
	req, err := http.NewRequest(http.MethodOptions, d.URL(), nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "null") // a page opened from a file
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "POST, OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "Content-Type", resp.Header.Get("Access-Control-Allow-Headers"))
}

func TestAnswersAllowAnyOriginToReadThem(t *testing.T) {
	d, _ := startPaused(t, Options{})
	req, err := http.NewRequest(http.MethodPost, d.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"getGenesisHash"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
}

// TestTheVerifyPagesCallsGetRealSolanaShapes makes the page's calls on a
// finalized memo transaction: getTransaction in the "json" encoding (the
// memo's data in base58, its program found through programIdIndex), and
// getBlock with no transactions or rewards (the slot's blockhash).
func TestTheVerifyPagesCallsGetRealSolanaShapes(t *testing.T) {
	ctx := context.Background()
	d, c := start(t, Options{})
	memo := "keeper:v1:" + strings.Repeat("ab", 32)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx(memo)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := status(t, c, sig)
		return st != nil && st.ConfirmationStatus == rpc.ConfirmationStatusFinalized
	}, 5*time.Second, testSlotTime)

	_, out := post(t, d.URL(), `{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":["`+sig.String()+
		`",{"encoding":"json","commitment":"confirmed","maxSupportedTransactionVersion":0}]}`)
	tx := out.(map[string]any)["result"].(map[string]any)
	assert.Nil(t, tx["meta"].(map[string]any)["err"])
	assert.Equal(t, "legacy", tx["version"])
	msg := tx["transaction"].(map[string]any)["message"].(map[string]any)
	keys := msg["accountKeys"].([]any)
	ixs := msg["instructions"].([]any)
	require.Len(t, ixs, 1)
	ix := ixs[0].(map[string]any)
	assert.Equal(t, solana.MemoProgramID.String(), keys[int(ix["programIdIndex"].(float64))])
	data, err := base58.Decode(ix["data"].(string))
	require.NoError(t, err)
	assert.Equal(t, memo, string(data))
	slot := tx["slot"].(float64)

	_, out = post(t, d.URL(), `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[`+u64s(uint64(slot))+
		`,{"transactionDetails":"none","rewards":false,"maxSupportedTransactionVersion":0}]}`)
	b := out.(map[string]any)["result"].(map[string]any)
	want, err := c.GetBlockWithOpts(ctx, uint64(slot), &rpc.GetBlockOpts{TransactionDetails: rpc.TransactionDetailsSignatures})
	require.NoError(t, err)
	assert.Equal(t, want.Blockhash.String(), b["blockhash"])
	assert.Equal(t, []any{sig.String()}, toAny(want.Signatures))
	assert.NotContains(t, b, "transactions")
	assert.NotContains(t, b, "signatures")
	assert.NotContains(t, b, "rewards")
}

func toAny(sigs []solana.Signature) []any {
	out := make([]any, len(sigs))
	for i, s := range sigs {
		out[i] = s.String()
	}
	return out
}
