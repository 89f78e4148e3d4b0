package devnet

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// The journal has no shutdown record: Stop writes nothing, so a restart
// after Stop reads what a restart after a SIGKILL reads (every block was
// written, unbuffered, when it was sealed).

// landed is what a client learned about a transaction before a restart.
type landed struct {
	sig       solana.Signature
	slot      uint64
	blockhash solana.Hash
	blockTime solana.UnixTimeSeconds
}

func lookUp(t *testing.T, c *rpc.Client, sig solana.Signature) landed {
	t.Helper()
	ctx := context.Background()
	tx, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	require.NotNil(t, tx.BlockTime)
	blk, err := c.GetBlockWithOpts(ctx, tx.Slot, &rpc.GetBlockOpts{Commitment: rpc.CommitmentConfirmed, TransactionDetails: rpc.TransactionDetailsSignatures, Rewards: ptr(false)})
	require.NoError(t, err)
	assert.Contains(t, blk.Signatures, sig)
	return landed{sig: sig, slot: tx.Slot, blockhash: blk.Blockhash, blockTime: *tx.BlockTime}
}

func startOn(t *testing.T, dir string, logs *testkit.SyncBuffer) (*Devnet, *rpc.Client) {
	t.Helper()
	o := Options{Dir: dir}
	if logs != nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	return startPaused(t, o)
}

// sendMemoAndTransfer lands a memo and a transfer in the next block.
func sendMemoAndTransfer(t *testing.T, d *Devnet, c *rpc.Client, to solana.PublicKey) (memo, transfer solana.Signature) {
	t.Helper()
	ctx := context.Background()
	payer := d.Payer()
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	var err error
	memo, err = c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{payer}, memoIx("keeper:v3 root 42", solana.Meta(payer.PublicKey()).SIGNER())))
	require.NoError(t, err)
	transfer, err = c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{payer}, transferIx(payer.PublicKey(), to, 5*LamportsPerSOL)))
	require.NoError(t, err)
	d.Advance(2)
	require.NotNil(t, status(t, c, memo))
	require.NotNil(t, status(t, c, transfer))
	return memo, transfer
}

func TestTransactionsMadeBeforeARestartAreFoundFinalAfterIt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, c := startOn(t, dir, nil)
	to := solana.NewWallet().PublicKey()
	memo, transfer := sendMemoAndTransfer(t, d, c, to)
	before := []landed{lookUp(t, c, memo), lookUp(t, c, transfer)}
	genesis, err := c.GetGenesisHash(ctx)
	require.NoError(t, err)
	payerBal := d.Balance(d.Payer().PublicKey())
	height := d.BlockHeight()
	d.Stop()

	d2, c2 := startOn(t, dir, nil)
	again, err := c2.GetGenesisHash(ctx)
	require.NoError(t, err)
	assert.Equal(t, genesis, again, "the same cluster (network id)")
	for _, want := range before {
		got := lookUp(t, c2, want.sig)
		assert.Equal(t, want, got, "same slot, blockhash and block time")
		_, err := c2.GetTransaction(ctx, want.sig, nil) // finalized, the default
		assert.NoError(t, err, "final after the restart")
	}
	st, err := c2.GetSignatureStatuses(ctx, true, memo, transfer)
	require.NoError(t, err)
	for i, s := range st.Value {
		require.NotNil(t, s, "status %d with history", i)
		assert.Equal(t, rpc.ConfirmationStatusFinalized, s.ConfirmationStatus)
		assert.Equal(t, before[i].slot, s.Slot)
	}
	sigs, err := c2.GetSignaturesForAddress(ctx, d2.Payer().PublicKey())
	require.NoError(t, err)
	var listed []solana.Signature
	for _, s := range sigs {
		listed = append(listed, s.Signature)
	}
	assert.Contains(t, listed, memo)
	assert.Contains(t, listed, transfer)
	bal, err := c2.GetBalance(ctx, to, rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.Equal(t, uint64(5*LamportsPerSOL), bal.Value)
	assert.Equal(t, payerBal, d2.Balance(d2.Payer().PublicKey()))

	// A client waits for the block height to pass a transaction's
	// lastValidBlockHeight before it signs anew: every one the old run
	// issued is already past.
	assert.Greater(t, d2.BlockHeight(), height+maxProcessingAge)
	_, err = c2.SendTransactionWithOpts(ctx, signed(t, before[0].blockhash, []solana.PrivateKey{d2.Payer()}, transferIx(d2.Payer().PublicKey(), to, 1)), processedPreflight())
	assert.Equal(t, `"BlockhashNotFound"`, errData(t, rpcErr(t, err)), "an old blockhash has expired at the tip")
	bh, _ := blockhash(t, c2, rpc.CommitmentFinalized)
	sig, err := c2.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{d2.Payer()}, transferIx(d2.Payer().PublicKey(), to, 1)))
	require.NoError(t, err)
	d2.Advance(2)
	require.NotNil(t, status(t, c2, sig), "the ledger goes on")
	assert.Greater(t, lookUp(t, c2, sig).slot, before[1].slot)
}

func TestATornJournalTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	d, c := startOn(t, dir, nil)
	memo, transfer := sendMemoAndTransfer(t, d, c, solana.NewWallet().PublicKey())
	want := lookUp(t, c, memo)
	d.Advance(3)
	d.Stop()

	// The process was killed in the middle of writing its last block.
	path := filepath.Join(dir, journalFileName)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, info.Size()-3))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0xff, 0, 0, 0, 1, 2})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var logs testkit.SyncBuffer
	_, c2 := startOn(t, dir, &logs)
	assert.Equal(t, want, lookUp(t, c2, memo))
	lookUp(t, c2, transfer)
	assert.Contains(t, logs.String(), "torn")

	// The torn bytes are gone: a third start reads a clean journal.
	var logs3 testkit.SyncBuffer
	d2, _ := startOn(t, dir, nil)
	d2.Stop()
	_, c3 := startOn(t, dir, &logs3)
	assert.Equal(t, want, lookUp(t, c3, memo))
	assert.NotContains(t, logs3.String(), "torn")
}

func TestWithoutADirARestartStartsAFreshCluster(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	memo, _ := sendMemoAndTransfer(t, d, c, solana.NewWallet().PublicKey())
	genesis, err := c.GetGenesisHash(ctx)
	require.NoError(t, err)
	d.Stop()

	_, c2 := startPaused(t, Options{})
	again, err := c2.GetGenesisHash(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, genesis, again)
	st, err := c2.GetSignatureStatuses(ctx, true, memo)
	require.NoError(t, err)
	assert.Nil(t, st.Value[0])
}

func TestADirAnOlderKeeperLeftWithOnlyAHeightFileBeginsAboveIt(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, legacyHeightFileName), []byte("1000\n"), 0o600))
	d, _ := startOn(t, dir, nil)
	assert.Greater(t, d.BlockHeight(), uint64(1000+maxProcessingAge))
}
