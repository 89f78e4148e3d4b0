package devnet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends a raw JSON-RPC body and decodes the answer.
func post(t *testing.T, url, body string) (int, any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out any
	if len(raw) > 0 && resp.Header.Get("Content-Type") != "" && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	} else {
		out = string(raw)
	}
	return resp.StatusCode, out
}

func TestGetSignatureStatusesRejectsMoreThan256Signatures(t *testing.T) {
	_, c := startPaused(t, Options{})
	sigs := make([]solana.Signature, 257)
	for i := range sigs {
		sigs[i][0] = byte(i)
		sigs[i][1] = byte(i >> 8)
	}
	_, err := c.GetSignatureStatuses(context.Background(), false, sigs...)
	e := rpcErr(t, err)
	assert.Equal(t, -32602, e.Code)
	assert.Equal(t, "Too many inputs provided; max 256", e.Message)

	out, err := c.GetSignatureStatuses(context.Background(), true, sigs[:256]...)
	require.NoError(t, err)
	assert.Len(t, out.Value, 256)
	for _, v := range out.Value {
		assert.Nil(t, v, "unknown signatures are null")
	}
}

func TestBatchRequestsAreAnsweredEntryByEntry(t *testing.T) {
	d, c := startPaused(t, Options{})
	d.Advance(3)
	resps, err := c.RPCCallBatch(context.Background(), jsonrpc.RPCRequests{
		jsonrpc.NewRequest("getSlot", []any{map[string]any{"commitment": "processed"}}),
		jsonrpc.NewRequest("getHealth"),
		jsonrpc.NewRequest("getBalance", d.Payer().PublicKey().String()),
		jsonrpc.NewRequest("noSuchMethod"),
	})
	require.NoError(t, err)
	require.Len(t, resps, 4)
	byID := resps.AsMap()
	var slot uint64
	require.NoError(t, byID[0].GetObject(&slot))
	assert.EqualValues(t, 3, slot)
	var health string
	require.NoError(t, byID[1].GetObject(&health))
	assert.Equal(t, "ok", health)
	var bal rpc.GetBalanceResult
	require.NoError(t, byID[2].GetObject(&bal))
	assert.EqualValues(t, DefaultPayerLamports, bal.Value)
	require.NotNil(t, byID[3].Error)
	assert.Equal(t, -32601, byID[3].Error.Code)
	assert.Equal(t, "Method not found", byID[3].Error.Message)
	assert.Equal(t, 3, d.Calls("getSlot")+d.Calls("getHealth")+d.Calls("getBalance"))
}

func TestTheHTTPLayerSpeaksJSONRPC20(t *testing.T) {
	d, _ := startPaused(t, Options{})

	code, out := post(t, d.URL(), `{"jsonrpc":"2.0","id":"x","method":"getSlot","params":[{"commitment":"processed"}]}`)
	assert.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": "x", "result": 0.0}, out)

	_, out = post(t, d.URL(), `{"jsonrpc":"2.0","id":1,"method":"getLatestBlockhash","params":[]}`)
	result := out.(map[string]any)["result"].(map[string]any)
	assert.Equal(t, map[string]any{"apiVersion": coreVersion, "slot": 0.0}, result["context"])
	assert.Contains(t, result["value"], "blockhash")
	assert.Equal(t, 150.0, result["value"].(map[string]any)["lastValidBlockHeight"])

	_, out = post(t, d.URL(), `{"jsonrpc":"2.0","id":2,"method":"getSlot","params":[{"commitment":"recent"}]}`)
	assert.Equal(t, -32602.0, out.(map[string]any)["error"].(map[string]any)["code"])

	_, out = post(t, d.URL(), `{"jsonrpc":"2.0","id":1,"method"`)
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700.0, "message": "Parse error"}}, out)

	_, out = post(t, d.URL(), `[]`)
	assert.Equal(t, -32600.0, out.(map[string]any)["error"].(map[string]any)["code"])

	_, out = post(t, d.URL(), `[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","method":"getHealth"},{"foo":1}]`)
	list := out.([]any)
	require.Len(t, list, 2, "notifications get no answer")
	assert.Equal(t, "ok", list[0].(map[string]any)["result"])
	assert.Equal(t, -32600.0, list[1].(map[string]any)["error"].(map[string]any)["code"])

	resp, err := http.Get(d.URL())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestTheSolanaGoClientCanCallEveryMethod(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	payer := d.Payer()
	d.Advance(40)

	health, err := c.GetHealth(ctx)
	require.NoError(t, err)
	assert.Equal(t, rpc.HealthOk, health)
	version, err := c.GetVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, coreVersion, version.SolanaCore)

	slot, err := c.GetSlot(ctx, rpc.CommitmentProcessed)
	require.NoError(t, err)
	assert.EqualValues(t, 40, slot)
	slot, err = c.GetSlot(ctx, "")
	require.NoError(t, err)
	assert.EqualValues(t, 8, slot, "the default commitment is finalized: 32 slots behind")
	height, err := c.GetBlockHeight(ctx, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	assert.EqualValues(t, 39, height)

	bh, lastValid := blockhash(t, c, rpc.CommitmentConfirmed)
	assert.EqualValues(t, 39+150, lastValid)

	info, err := c.GetAccountInfo(ctx, payer.PublicKey())
	require.NoError(t, err)
	assert.EqualValues(t, DefaultPayerLamports, info.Value.Lamports)
	assert.Equal(t, solana.SystemProgramID, info.Value.Owner)
	assert.Empty(t, info.GetBinary())
	_, err = c.GetAccountInfo(ctx, solana.NewWallet().PublicKey())
	assert.ErrorIs(t, err, rpc.ErrNotFound)
	memoProgram, err := c.GetAccountInfo(ctx, solana.MemoProgramID)
	require.NoError(t, err)
	assert.True(t, memoProgram.Value.Executable)
	many, err := c.GetMultipleAccounts(ctx, payer.PublicKey(), solana.NewWallet().PublicKey())
	require.NoError(t, err)
	require.Len(t, many.Value, 2)
	assert.NotNil(t, many.Value[0])
	assert.Nil(t, many.Value[1])

	rent, err := c.GetMinimumBalanceForRentExemption(ctx, 0, "")
	require.NoError(t, err)
	assert.EqualValues(t, 890_880, rent)

	tx := signed(t, bh, []solana.PrivateKey{payer}, memoIx("every method", solana.Meta(payer.PublicKey()).SIGNER()))
	fee, err := c.GetFeeForMessage(ctx, tx.Message.ToBase64(), rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.NotNil(t, fee.Value)
	assert.EqualValues(t, 5000, *fee.Value)

	sim, err := c.SimulateTransactionWithOpts(ctx, tx, &rpc.SimulateTransactionOpts{SigVerify: true, Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Nil(t, sim.Value.Err)
	assert.Contains(t, sim.Value.Logs, `Program log: Memo (len 12): "every method"`)
	require.NotNil(t, sim.Value.UnitsConsumed)
	assert.NotZero(t, *sim.Value.UnitsConsumed)

	// sendTransaction with base58, the real RPC's default encoding.
	raw, err := tx.MarshalBinary()
	require.NoError(t, err)
	var sig solana.Signature
	require.NoError(t, c.RPCCallForInto(ctx, &sig, "sendTransaction", []any{
		base58.Encode(raw), map[string]any{"preflightCommitment": "confirmed", "maxRetries": 3},
	}))
	assert.Equal(t, tx.Signatures[0], sig)
	d.Advance(2)

	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: ptr(uint64(0)),
	})
	require.NoError(t, err)
	assert.Equal(t, raw, got.Transaction.GetBinary())
	parsed, err := c.GetParsedTransaction(ctx, sig, &rpc.GetParsedTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	require.Len(t, parsed.Transaction.Message.Instructions, 1)
	assert.Equal(t, "spl-memo", parsed.Transaction.Message.Instructions[0].Program)

	blockTime, err := c.GetBlockTime(ctx, got.Slot)
	require.NoError(t, err)
	assert.Equal(t, *got.BlockTime, *blockTime)
	block, err := c.GetBlockWithOpts(ctx, got.Slot, &rpc.GetBlockOpts{
		Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: ptr(uint64(0)),
	})
	require.NoError(t, err)
	require.Len(t, block.Transactions, 1)
	blockTx, err := block.Transactions[0].GetTransaction()
	require.NoError(t, err)
	assert.Equal(t, sig, blockTx.Signatures[0])
	_, err = c.GetBlock(ctx, d.Slot()+10)
	assert.Equal(t, -32004, rpcErr(t, err).Code)

	epoch, err := c.GetEpochInfo(ctx, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.NotNil(t, epoch.TransactionCount)
	assert.EqualValues(t, 1, *epoch.TransactionCount)
	genesis, err := c.GetGenesisHash(ctx)
	require.NoError(t, err)
	assert.False(t, genesis.IsZero())
}

func TestStatusesOfOldTransactionsNeedSearchTransactionHistory(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{StatusCacheSlots: 10})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("old")))
	require.NoError(t, err)
	d.Advance(finalizedDepth + 12)

	assert.Nil(t, status(t, c, sig), "out of the status cache")
	out, err := c.GetSignatureStatuses(ctx, true, sig)
	require.NoError(t, err)
	require.NotNil(t, out.Value[0])
	assert.Equal(t, rpc.ConfirmationStatusFinalized, out.Value[0].ConfirmationStatus)
}

func TestMinContextSlotIsEnforced(t *testing.T) {
	_, c := startPaused(t, Options{})
	var out uint64
	err := c.RPCCallForInto(context.Background(), &out, "getSlot", []any{map[string]any{"minContextSlot": 5}})
	e := rpcErr(t, err)
	assert.Equal(t, -32016, e.Code)
	assert.Equal(t, "Minimum context slot has not been reached", e.Message)
}

func TestMalformedTransactionsAreInvalidParams(t *testing.T) {
	_, c := startPaused(t, Options{})
	_, err := c.SendEncodedTransaction(context.Background(), base64.StdEncoding.EncodeToString([]byte{1, 2, 3}))
	e := rpcErr(t, err)
	assert.Equal(t, -32602, e.Code)
	assert.True(t, strings.HasPrefix(e.Message, "failed to deserialize solana_transaction::versioned::VersionedTransaction"), e.Message)

	var sig solana.Signature
	err = c.RPCCallForInto(context.Background(), &sig, "sendTransaction", []any{"AAAA", map[string]any{"encoding": "hex"}})
	assert.Equal(t, "unsupported encoding: hex. Supported encodings: base58, base64", rpcErr(t, err).Message)
}
