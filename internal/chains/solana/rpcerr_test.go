package solana

import (
	"errors"
	"testing"

	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"github.com/stretchr/testify/assert"
)

func TestSendAnswersAreSortedIntoSuccessRetryAndGiveUp(t *testing.T) {
	sim := func(err any) *jsonrpc.RPCError {
		return &jsonrpc.RPCError{Code: -32002, Message: "Transaction simulation failed: x", Data: map[string]any{"err": err}}
	}
	for name, c := range map[string]struct {
		err  error
		want sendOutcome
	}{
		"accepted":                {nil, sendOK},
		"already processed":       {sim("AlreadyProcessed"), sendAlreadyProcessed},
		"blockhash not found":     {sim("BlockhashNotFound"), sendBlockhashExpired},
		"bad signature":           {&jsonrpc.RPCError{Code: -32003, Message: "Transaction signature verification failure"}, sendPermanent},
		"undecodable transaction": {&jsonrpc.RPCError{Code: -32602, Message: "invalid transaction: failed to deserialize"}, sendPermanent},
		"memo program error":      {sim(map[string]any{"InstructionError": []any{0, "InvalidInstructionData"}}), sendPermanent},
		"unfunded payer":          {sim("AccountNotFound"), sendTransient},
		"fee larger than balance": {sim("InsufficientFundsForFee"), sendTransient},
		"node behind":             {&jsonrpc.RPCError{Code: -32005, Message: "Node is unhealthy"}, sendTransient},
		"internal error":          {&jsonrpc.RPCError{Code: -32603, Message: "Internal error"}, sendTransient},
		"connection refused":      {errors.New("dial tcp: connection refused"), sendTransient},
	} {
		assert.Equal(t, c.want, classifySend(c.err), name)
	}
}

func TestRPCErrorsShowTheEndpointOnlyByHost(t *testing.T) {
	url := "https://user:pw@rpc.example.com/v2/KEY123?api-key=KEY456"
	err := newRPCError(url, "getBlockHeight", errors.New(`Post "`+url+`": dial tcp: i/o timeout`))

	assert.Equal(t, `solana: getBlockHeight: Post "https://rpc.example.com/…": dial tcp: i/o timeout`, err.Error())
}
