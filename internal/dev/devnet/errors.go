package devnet

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC error codes, as the Solana (Agave) RPC uses them.
const (
	codeParseError                = -32700
	codeInvalidRequest            = -32600
	codeMethodNotFound            = -32601
	codeInvalidParams             = -32602
	codeInternalError             = -32603
	codeSendTxPreflightFailure    = -32002
	codeSigVerificationFailure    = -32003
	codeBlockNotAvailable         = -32004
	codeNodeUnhealthy             = -32005
	codeSlotSkipped               = -32007
	codeUnsupportedTxVersion      = -32015
	codeMinContextSlotNotReached  = -32016
	codeAirdropFailed             = -32600 // the faucet path answers with InvalidRequest
	msgSigVerificationFailure     = "Transaction signature verification failure"
	msgMinContextSlotNotReached   = "Minimum context slot has not been reached"
	msgCommitmentBelowConfirmed   = "Method does not support commitment below `confirmed`"
	msgTooManySignatures          = "Too many inputs provided; max 256"
	maxSignatureStatusesQuery     = 256
	maxSignaturesForAddressResult = 1000
)

// rpcError is a JSON-RPC 2.0 error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// instrError mirrors solana_instruction::error::InstructionError (the variants
// the devnet's programs can raise).
type instrError struct {
	kind   string // variant name; "Custom" uses custom
	custom uint32
}

var instrErrorText = map[string]string{
	"MissingRequiredSignature":    "missing required signature for instruction",
	"InvalidInstructionData":      "invalid instruction data",
	"NotEnoughAccountKeys":        "insufficient account keys for instruction",
	"ComputationalBudgetExceeded": "Computational budget exceeded",
	"ReadonlyLamportChange":       "instruction changed the balance of a read-only account",
	"InvalidArgument":             "invalid program argument",
}

func (e *instrError) String() string {
	if e.kind == "Custom" {
		return fmt.Sprintf("custom program error: 0x%x", e.custom)
	}
	if s, ok := instrErrorText[e.kind]; ok {
		return s
	}
	return e.kind
}

func (e *instrError) MarshalJSON() ([]byte, error) {
	if e.kind == "Custom" {
		return json.Marshal(map[string]uint32{"Custom": e.custom})
	}
	return json.Marshal(e.kind)
}

// txError mirrors solana_transaction_error::TransactionError, serialized the
// way the RPC does (serde's externally tagged enum).
type txError struct {
	kind  string
	index int // instruction index (InstructionError, DuplicateInstruction) or account index (InsufficientFundsForRent)
	instr *instrError
}

var txErrorText = map[string]string{
	"AccountNotFound":            "Attempt to debit an account but found no record of a prior credit.",
	"ProgramAccountNotFound":     "Attempt to load a program that does not exist",
	"InvalidProgramForExecution": "This program may not be used for executing instructions",
	"InsufficientFundsForFee":    "Insufficient funds for fee",
	"InvalidAccountForFee":       "This account may not be used to pay transaction fees",
	"AlreadyProcessed":           "This transaction has already been processed",
	"BlockhashNotFound":          "Blockhash not found",
	"SignatureFailure":           "Transaction did not pass signature verification",
	"SanitizeFailure":            "Transaction failed to sanitize accounts offsets correctly",
	"AccountLoadedTwice":         "Account loaded twice",
	"AddressLookupTableNotFound": "Transaction loads an address table account that doesn't exist",
	"UnsupportedVersion":         "Transaction version is unsupported",
}

func newTxError(kind string) *txError { return &txError{kind: kind} }

func instructionError(index int, kind string) *txError {
	return &txError{kind: "InstructionError", index: index, instr: &instrError{kind: kind}}
}

func customInstructionError(index int, code uint32) *txError {
	return &txError{kind: "InstructionError", index: index, instr: &instrError{kind: "Custom", custom: code}}
}

func (e *txError) Error() string { return e.String() }

func (e *txError) String() string {
	switch e.kind {
	case "InstructionError":
		return fmt.Sprintf("Error processing Instruction %d: %s", e.index, e.instr)
	case "DuplicateInstruction":
		return fmt.Sprintf("Transaction contains a duplicate instruction (%d) that is not allowed", e.index)
	case "InsufficientFundsForRent":
		return fmt.Sprintf("Transaction results in an account (%d) with insufficient funds for rent", e.index)
	}
	if s, ok := txErrorText[e.kind]; ok {
		return s
	}
	return e.kind
}

func (e *txError) MarshalJSON() ([]byte, error) {
	switch e.kind {
	case "InstructionError":
		return json.Marshal(map[string]any{"InstructionError": []any{e.index, e.instr}})
	case "DuplicateInstruction":
		return json.Marshal(map[string]any{"DuplicateInstruction": e.index})
	case "InsufficientFundsForRent":
		return json.Marshal(map[string]any{"InsufficientFundsForRent": map[string]int{"account_index": e.index}})
	}
	return json.Marshal(e.kind)
}

// errJSON returns the value an "err" field carries: null or the error.
func errJSON(e *txError) any {
	if e == nil {
		return nil
	}
	return e
}

// statusJSON is the deprecated "status" field: {"Ok": null} or {"Err": ...}.
func statusJSON(e *txError) any {
	if e == nil {
		return map[string]any{"Ok": nil}
	}
	return map[string]any{"Err": e}
}
