package devnet

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"github.com/stretchr/testify/require"
)

const testSlotTime = 20 * time.Millisecond

// startPaused starts a devnet whose clock is paused: tests move it with
// Advance, which keeps them deterministic and fast.
func startPaused(t *testing.T, opts Options) (*Devnet, *rpc.Client) {
	t.Helper()
	d, c := start(t, opts)
	d.Pause()
	return d, c
}

func start(t *testing.T, opts Options) (*Devnet, *rpc.Client) {
	t.Helper()
	if opts.SlotTime == 0 {
		opts.SlotTime = testSlotTime
	}
	d, err := Start(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(d.Stop)
	return d, rpc.New(d.URL())
}

// memoIx builds an SPL Memo instruction by hand: the data is the raw UTF-8
// text (solana-go's memo builder length-prefixes it, which the real program
// would log as part of the memo).
func memoIx(text string, accounts ...*solana.AccountMeta) solana.Instruction {
	return solana.NewInstruction(solana.MemoProgramID, accounts, []byte(text))
}

func transferIx(from, to solana.PublicKey, lamports uint64) solana.Instruction {
	return system.NewTransferInstruction(lamports, from, to).Build()
}

func signed(t *testing.T, bh solana.Hash, signers []solana.PrivateKey, ixs ...solana.Instruction) *solana.Transaction {
	t.Helper()
	tx, err := solana.NewTransaction(ixs, bh, solana.TransactionPayer(signers[0].PublicKey()))
	require.NoError(t, err)
	_, err = tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		for i := range signers {
			if signers[i].PublicKey() == k {
				return &signers[i]
			}
		}
		return nil
	})
	require.NoError(t, err)
	return tx
}

func blockhash(t *testing.T, c *rpc.Client, commitment rpc.CommitmentType) (solana.Hash, uint64) {
	t.Helper()
	out, err := c.GetLatestBlockhash(context.Background(), commitment)
	require.NoError(t, err)
	return out.Value.Blockhash, out.Value.LastValidBlockHeight
}

func status(t *testing.T, c *rpc.Client, sig solana.Signature) *rpc.SignatureStatusesResult {
	t.Helper()
	out, err := c.GetSignatureStatuses(context.Background(), false, sig)
	require.NoError(t, err)
	require.Len(t, out.Value, 1)
	return out.Value[0]
}

// rpcErr extracts the JSON-RPC error from a solana-go client error.
func rpcErr(t *testing.T, err error) *jsonrpc.RPCError {
	t.Helper()
	require.Error(t, err)
	var e *jsonrpc.RPCError
	require.True(t, errors.As(err, &e), "want a JSON-RPC error, got %v", err)
	return e
}

// errData returns the "err" of a -32002 preflight error's data, as JSON.
func errData(t *testing.T, e *jsonrpc.RPCError) string {
	t.Helper()
	data, ok := e.Data.(map[string]any)
	require.True(t, ok, "error data: %#v", e.Data)
	buf, err := json.Marshal(data["err"])
	require.NoError(t, err)
	return string(buf)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	buf, err := json.Marshal(v)
	require.NoError(t, err)
	return string(buf)
}

var skipPreflight = rpc.TransactionOpts{SkipPreflight: true}

func processedPreflight() rpc.TransactionOpts {
	return rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentProcessed}
}

func ptr[T any](v T) *T { return &v }
