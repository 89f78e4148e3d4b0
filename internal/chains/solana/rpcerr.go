package solana

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
)

// rpcError is a failed RPC call with a readable message that shows the
// endpoint only by scheme and host (URLs often carry API keys).
type rpcError struct {
	op  string
	msg string
	err error
}

func (e *rpcError) Error() string { return "solana: " + e.op + ": " + e.msg }
func (e *rpcError) Unwrap() error { return e.err }

// rpcErr wraps the error of RPC method op.
func (a *Adapter) rpcErr(op string, err error) error {
	return newRPCError(a.rpcURL, op, err)
}

func newRPCError(rpcURL, op string, err error) *rpcError {
	var msg string
	var re *jsonrpc.RPCError
	if errors.As(err, &re) {
		msg = fmt.Sprintf("rpc error %d: %s", re.Code, re.Message)
		if d := dataErr(re.Data); d != "" && !strings.Contains(re.Message, d) {
			msg += " (" + d + ")"
		}
	} else {
		msg = err.Error()
	}
	if rpcURL != "" {
		msg = strings.ReplaceAll(msg, rpcURL, redact.Endpoint(rpcURL))
		if u, perr := url.Parse(rpcURL); perr == nil {
			msg = strings.ReplaceAll(msg, u.String(), redact.Endpoint(rpcURL))
		}
	}
	return &rpcError{op: op, msg: msg, err: err}
}

// dataErr is the "err" member of an RPC error's data (simulation failures
// carry the transaction error there), as compact JSON.
func dataErr(data any) string {
	m, ok := data.(map[string]any)
	if !ok {
		return ""
	}
	e, ok := m["err"]
	if !ok || e == nil {
		return ""
	}
	b, err := json.Marshal(e)
	if err != nil {
		return ""
	}
	return string(b)
}

// sendOutcome classifies the answer to sendTransaction.
type sendOutcome int

const (
	sendOK               sendOutcome = iota
	sendAlreadyProcessed             // the chain has it already: success
	sendBlockhashExpired             // the node no longer knows the blockhash
	sendTransient
	sendPermanent
)

// classifySend decides what a sendTransaction error means.
func classifySend(err error) sendOutcome {
	if err == nil {
		return sendOK
	}
	var re *jsonrpc.RPCError
	if !errors.As(err, &re) {
		return sendTransient // transport, timeout, HTTP status
	}
	text := re.Message + " " + dataErr(re.Data)
	switch {
	case strings.Contains(text, "AlreadyProcessed"), strings.Contains(text, "already been processed"):
		return sendAlreadyProcessed
	case strings.Contains(text, "BlockhashNotFound"), strings.Contains(text, "Blockhash not found"):
		return sendBlockhashExpired
	case re.Code == -32003, // signature verification failure
		re.Code == -32013, // signature length mismatch
		re.Code == -32015, // transaction version not supported
		re.Code == -32602, // invalid params: the node cannot decode the transaction
		strings.Contains(text, "InstructionError"),
		strings.Contains(text, "SignatureFailure"),
		strings.Contains(text, "InvalidAccountIndex"),
		strings.Contains(text, "SanitizeFailure"),
		strings.Contains(text, "TooManyAccountLocks"):
		return sendPermanent
	}
	// Unfunded payer (AccountNotFound, InsufficientFundsForFee), node behind,
	// rate limits: an operator or time can fix these.
	return sendTransient
}

// sendError turns a failed send into the error Submit returns.
func (a *Adapter) sendError(ref string, err error) error {
	e := a.rpcErr("sendTransaction "+ref, err)
	if classifySend(err) == sendPermanent {
		return retry.Permanent(e)
	}
	return e
}
