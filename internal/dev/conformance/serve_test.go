package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func replayVector() Vector {
	return Vector{
		Endpoints: map[string][]string{"etherlink": {"etherlink-1", "etherlink-2"}, "solana": {"solana-1"}},
		Answers: map[string][]Call{
			"etherlink-1": {
				{Method: "eth_chainId", Params: []json.RawMessage{}, Result: raw(`"0xa729"`)},
				{Method: "eth_getBlockByNumber", Params: []json.RawMessage{raw(`"0x1e"`), raw(`false`)}, Result: raw(`{"number":"0x1e"}`)},
				{Method: "eth_getTransactionByHash", Params: []json.RawMessage{raw(`"0xab"`)}, Result: raw(`null`)},
			},
			"etherlink-2": {{Method: "eth_chainId", Params: []json.RawMessage{}, Result: raw(`"0x1"`)}},
			"solana-1": {
				{Method: "getBlock", Params: []json.RawMessage{raw(`42`), raw(`{"commitment":"finalized"}`)}, Result: raw(`{"blockTime":7}`)},
				{Method: "getTransaction", Params: []json.RawMessage{raw(`"sig"`)}, Error: &RPCError{Code: -32004, Message: "gone"}},
			},
		},
	}
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(out)
}

func TestServeReturnsEachChainsEndpointsInTheVectorsOrder(t *testing.T) {
	urls := Serve(t, replayVector())
	require.Len(t, urls["etherlink"], 2)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/etherlink-1$`, urls["etherlink"][0])
	assert.Regexp(t, `/etherlink-2$`, urls["etherlink"][1])
	assert.Regexp(t, `/solana-1$`, urls["solana"][0])
}

func TestServeAnswersByMethodAndFirstParamOnly(t *testing.T) {
	urls := Serve(t, replayVector())
	sol := urls["solana"][0]
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"blockTime":7}}`,
		post(t, sol, `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[42,{"commitment":"confirmed","rewards":false}]}`))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"a","error":{"code":-32004,"message":"gone"}}`,
		post(t, sol, `{"jsonrpc":"2.0","id":"a","method":"getTransaction","params":["sig",{"encoding":"base64"}]}`))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"number":"0x1e"}}`,
		post(t, urls["etherlink"][0], `{"jsonrpc":"2.0","id":2,"method":"eth_getBlockByNumber","params":[ "0x1e" , true]}`))
}

func TestServeAnswersARecordedNullAsAResult(t *testing.T) {
	urls := Serve(t, replayVector())
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":null}`,
		post(t, urls["etherlink"][0], `{"jsonrpc":"2.0","id":3,"method":"eth_getTransactionByHash","params":["0xab"]}`))
}

func TestServeRefusesACallItDidNotRecord(t *testing.T) {
	urls := Serve(t, replayVector())
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"not recorded: eth_getBlockByNumber \"0x1E\""}}`,
		post(t, urls["etherlink"][0], `{"jsonrpc":"2.0","id":4,"method":"eth_getBlockByNumber","params":["0x1E",false]}`))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"not recorded: eth_blockNumber"}}`,
		post(t, urls["etherlink"][0], `{"jsonrpc":"2.0","id":5,"method":"eth_blockNumber"}`))
}

func TestServeAnswersEachEndpointFromItsOwnCalls(t *testing.T) {
	urls := Serve(t, replayVector())
	call := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"0xa729"}`, post(t, urls["etherlink"][0], call))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, post(t, urls["etherlink"][1], call))
}

func TestServeAnswersABatchInOrder(t *testing.T) {
	urls := Serve(t, replayVector())
	got := post(t, urls["etherlink"][0], `[
		{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},
		{"jsonrpc":"2.0","id":2,"method":"eth_getTransactionByHash","params":["0xcd"]}
	]`)
	assert.JSONEq(t, `[
		{"jsonrpc":"2.0","id":1,"result":"0xa729"},
		{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"not recorded: eth_getTransactionByHash \"0xcd\""}}
	]`, got)
}

func TestServeAnswersACORSPreflight(t *testing.T) {
	urls := Serve(t, replayVector())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodOptions, urls["solana"][0], nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestServeHasNoEndpointTheVectorDoesNotName(t *testing.T) {
	urls := Serve(t, replayVector())
	base := urls["solana"][0][:len(urls["solana"][0])-len("solana-1")]
	resp, err := http.Post(base+"solana-9", "application/json", bytes.NewBufferString(`{}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
