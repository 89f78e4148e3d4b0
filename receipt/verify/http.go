//go:build !js

package verify

import (
	"context"
	"strings"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/internal/redact"
)

// EVM asks the EVM node at rpcURL about transaction ref over HTTP
// JSON-RPC (ReadEVM).
func EVM(ctx context.Context, rpcURL, ref string) (Tx, error) {
	tx, err := ReadEVM(ctx, chainread.HTTP(rpcURL, nil), ref)
	return tx, scrub(err, rpcURL)
}

// Solana asks the Solana node at rpcURL about the transaction with
// signature ref over HTTP JSON-RPC (ReadSolana).
func Solana(ctx context.Context, rpcURL, ref string) (Tx, error) {
	tx, err := ReadSolana(ctx, chainread.HTTP(rpcURL, nil), ref)
	return tx, scrub(err, rpcURL)
}

// Lookups are the chains this package reads over HTTP, by receipt chain
// name (tests and other chains add their own to Options.Lookups).
var Lookups = map[string]Lookup{
	"etherlink": EVM,
	"solana":    Solana,
}

// httpCaller is the Caller of an endpoint when Options.Caller is nil.
func httpCaller(url string) chainread.Caller { return chainread.HTTP(url, nil) }

// scrubbed is an error whose text no longer holds the endpoint's URL, which
// may carry an API key (HTTP client errors quote it); it still wraps the
// original for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func scrub(err error, rpcURL string) error {
	if err == nil {
		return nil
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), rpcURL, redact.Endpoint(rpcURL)), err: err}
}
