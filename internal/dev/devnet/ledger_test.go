package devnet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMemoTransactionMovesFromProcessedToConfirmedToFinalized(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{Dir: t.TempDir()})
	payer := d.Payer()
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	before, err := c.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentFinalized)
	require.NoError(t, err)

	tx := signed(t, bh, []solana.PrivateKey{payer}, memoIx("batch 7 root ab12", solana.Meta(payer.PublicKey()).SIGNER()))
	sig, err := c.SendTransaction(ctx, tx)
	require.NoError(t, err)
	assert.Equal(t, tx.Signatures[0], sig)
	assert.Nil(t, status(t, c, sig), "not included before the next slot")

	d.Advance(1)
	st := status(t, c, sig)
	require.NotNil(t, st)
	assert.Equal(t, rpc.ConfirmationStatusProcessed, st.ConfirmationStatus)
	require.NotNil(t, st.Confirmations)
	assert.EqualValues(t, 0, *st.Confirmations)
	assert.Nil(t, st.Err)
	landed := st.Slot

	_, err = c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	assert.ErrorIs(t, err, rpc.ErrNotFound, "a processed transaction is not served at confirmed")

	d.Advance(1)
	st = status(t, c, sig)
	assert.Equal(t, rpc.ConfirmationStatusConfirmed, st.ConfirmationStatus)
	assert.EqualValues(t, 1, *st.Confirmations)
	confirmedTx, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Equal(t, landed, confirmedTx.Slot)
	_, err = c.GetTransaction(ctx, sig, nil)
	assert.ErrorIs(t, err, rpc.ErrNotFound, "getTransaction defaults to finalized")

	d.Advance(finalizedDepth - 2)
	assert.Equal(t, rpc.ConfirmationStatusConfirmed, status(t, c, sig).ConfirmationStatus, "slot+31 is not final yet")
	d.Advance(1)
	st = status(t, c, sig)
	assert.Equal(t, rpc.ConfirmationStatusFinalized, st.ConfirmationStatus)
	assert.Nil(t, st.Confirmations, "confirmations is null once rooted")

	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		MaxSupportedTransactionVersion: ptr(uint64(0)), // encoding: the server's default, json
	})
	require.NoError(t, err)
	assert.Equal(t, landed, got.Slot)
	require.NotNil(t, got.BlockTime)
	assert.NotZero(t, *got.BlockTime)
	assert.Equal(t, rpc.LegacyTransactionVersion, got.Version)
	require.NotNil(t, got.Meta)
	assert.Nil(t, got.Meta.Err)
	assert.EqualValues(t, 5000, got.Meta.Fee)
	assert.Equal(t, []string{
		"Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr invoke [1]",
		"Program log: Signed by " + payer.PublicKey().String(),
		`Program log: Memo (len 17): "batch 7 root ab12"`,
		"Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr consumed 13153 of 200000 compute units",
		"Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr success",
	}, got.Meta.LogMessages)
	require.Len(t, got.Meta.PreBalances, 2)
	assert.Equal(t, got.Meta.PreBalances[0]-5000, got.Meta.PostBalances[0])
	parsed, err := got.Transaction.GetTransaction()
	require.NoError(t, err)
	assert.Equal(t, tx.Signatures, parsed.Signatures)
	assert.Equal(t, []byte("batch 7 root ab12"), []byte(parsed.Message.Instructions[0].Data))

	after, err := c.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.Equal(t, before.Value-5000, after.Value, "the fee is debited")
}

func TestThePayerKeyFileIsASolanaKeypairThatIsReusedAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	d1, c := start(t, Options{Dir: dir, PayerLamports: 7 * LamportsPerSOL})
	path := d1.FaucetKeyFile()
	assert.Equal(t, filepath.Join(dir, PayerKeyFileName), path)

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var ints []int
	require.NoError(t, json.Unmarshal(raw, &ints))
	assert.Len(t, ints, 64)
	k, err := solana.PrivateKeyFromSolanaKeygenFile(path)
	require.NoError(t, err)
	assert.Equal(t, d1.Payer(), k)

	bal, err := c.GetBalance(context.Background(), k.PublicKey(), "")
	require.NoError(t, err)
	assert.EqualValues(t, 7*LamportsPerSOL, bal.Value, "funded at genesis, visible at finalized")
	d1.Stop()

	d2, _ := start(t, Options{Dir: dir})
	assert.Equal(t, k, d2.Payer())
}

func TestATamperedSignatureIsRejectedAndNeverLands(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("hello"))
	tx.Signatures[0][10] ^= 0xff

	_, err := c.SendTransaction(ctx, tx)
	e := rpcErr(t, err)
	assert.Equal(t, -32003, e.Code)
	assert.Equal(t, "Transaction signature verification failure", e.Message)

	sig, err := c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err, "without preflight the node accepts it; the leader drops it")
	d.Advance(3)
	assert.Nil(t, status(t, c, sig))
}

func TestABlockhashOlderThan150BlocksIsNotFound(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, lastValid := blockhash(t, c, rpc.CommitmentProcessed)
	assert.EqualValues(t, d.BlockHeight()+150, lastValid)

	d.Advance(150)
	valid, err := c.IsBlockhashValid(ctx, bh, rpc.CommitmentProcessed)
	require.NoError(t, err)
	assert.True(t, valid.Value, "still valid at lastValidBlockHeight")
	d.Advance(1)
	valid, err = c.IsBlockhashValid(ctx, bh, rpc.CommitmentProcessed)
	require.NoError(t, err)
	assert.False(t, valid.Value)

	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("late"))
	_, err = c.SendTransactionWithOpts(ctx, tx, processedPreflight())
	e := rpcErr(t, err)
	assert.Equal(t, -32002, e.Code)
	assert.Equal(t, "Transaction simulation failed: Blockhash not found", e.Message)
	assert.Equal(t, `"BlockhashNotFound"`, errData(t, e))

	sig, err := c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err)
	d.Advance(2)
	assert.Nil(t, status(t, c, sig), "an expired transaction never lands")
	assert.Zero(t, d.Pending(), "the send service gives up on expired transactions")
}

func TestDefaultPreflightRunsAgainstTheFinalizedBank(t *testing.T) {
	// Like the real RPC: a blockhash the finalized bank has not seen yet fails
	// preflight unless preflightCommitment says otherwise.
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	d.Advance(5)
	bh, _ := blockhash(t, c, rpc.CommitmentProcessed)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("fresh"))

	_, err := c.SendTransaction(ctx, tx)
	assert.Equal(t, `"BlockhashNotFound"`, errData(t, rpcErr(t, err)))

	_, err = c.SendTransactionWithOpts(ctx, tx, processedPreflight())
	require.NoError(t, err)
}

func TestSendingAnIncludedTransactionAgainIsAlreadyProcessed(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, memoIx("once"))
	sig, err := c.SendTransaction(ctx, tx)
	require.NoError(t, err)

	again, err := c.SendTransaction(ctx, tx)
	require.NoError(t, err, "a duplicate of a pending transaction is absorbed")
	assert.Equal(t, sig, again)
	d.Advance(1)

	_, err = c.SendTransactionWithOpts(ctx, tx, processedPreflight())
	e := rpcErr(t, err)
	assert.Equal(t, -32002, e.Code)
	assert.Equal(t, "Transaction simulation failed: This transaction has already been processed", e.Message)
	assert.Equal(t, `"AlreadyProcessed"`, errData(t, e))

	_, err = c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err)
	d.Advance(2)
	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.EqualValues(t, 5000, got.Meta.Fee, "charged once")
	block, err := c.GetBlockWithOpts(ctx, got.Slot, &rpc.GetBlockOpts{
		Commitment: rpc.CommitmentConfirmed, TransactionDetails: rpc.TransactionDetailsSignatures,
	})
	require.NoError(t, err)
	assert.Equal(t, []solana.Signature{sig}, block.Signatures)
}

func TestAMemoListingANonSignerAccountFailsButPaysItsFee(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	payer := d.Payer()
	stranger := solana.NewWallet().PublicKey()
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{payer}, memoIx("not yours",
		solana.Meta(payer.PublicKey()).SIGNER(), solana.Meta(stranger)))

	_, err := c.SendTransaction(ctx, tx)
	e := rpcErr(t, err)
	assert.Equal(t, -32002, e.Code)
	assert.Equal(t, "Transaction simulation failed: Error processing Instruction 0: missing required signature for instruction", e.Message)
	assert.Equal(t, `{"InstructionError":[0,"MissingRequiredSignature"]}`, errData(t, e))
	logs := e.Data.(map[string]any)["logs"]
	assert.Contains(t, logs, "Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr failed: missing required signature for instruction")

	before := d.Balance(payer.PublicKey())
	sig, err := c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err)
	d.Advance(2)
	st := status(t, c, sig)
	require.NotNil(t, st)
	assert.Equal(t, `{"InstructionError":[0,"MissingRequiredSignature"]}`, jsonOf(t, st.Err))
	assert.Equal(t, before-5000, d.Balance(payer.PublicKey()), "a failed transaction pays its fee")

	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Equal(t, `{"InstructionError":[0,"MissingRequiredSignature"]}`, jsonOf(t, got.Meta.Err))
	assert.EqualValues(t, 5000, got.Meta.Fee)
}

func TestAMemoThatIsNotUTF8IsInvalidInstructionData(t *testing.T) {
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	ix := solana.NewInstruction(solana.MemoProgramID, nil, []byte{'o', 'k', 0xff})
	_, err := c.SendTransaction(context.Background(), signed(t, bh, []solana.PrivateKey{d.Payer()}, ix))
	e := rpcErr(t, err)
	assert.Equal(t, `{"InstructionError":[0,"InvalidInstructionData"]}`, errData(t, e))
	assert.Contains(t, e.Data.(map[string]any)["logs"], "Program log: Invalid UTF-8, from byte 2")
}

func TestAnAirdropAndATransferMoveBalances(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	alice, err := solana.NewRandomPrivateKey()
	require.NoError(t, err)
	bob := solana.NewWallet().PublicKey()

	airdrop, err := c.RequestAirdrop(ctx, alice.PublicKey(), 2*LamportsPerSOL, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	d.Advance(2)
	assert.Equal(t, rpc.ConfirmationStatusConfirmed, status(t, c, airdrop).ConfirmationStatus)
	bal, err := c.GetBalance(ctx, alice.PublicKey(), rpc.CommitmentConfirmed)
	require.NoError(t, err)
	assert.EqualValues(t, 2*LamportsPerSOL, bal.Value)
	bal, err = c.GetBalance(ctx, alice.PublicKey(), "")
	require.NoError(t, err)
	assert.Zero(t, bal.Value, "not finalized yet")

	bh, _ := blockhash(t, c, rpc.CommitmentConfirmed)
	tx := signed(t, bh, []solana.PrivateKey{alice}, transferIx(alice.PublicKey(), bob, LamportsPerSOL/2))
	sig, err := c.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	d.Advance(2)
	assert.Nil(t, status(t, c, sig).Err)
	aliceBal, err := c.GetBalance(ctx, alice.PublicKey(), rpc.CommitmentConfirmed)
	require.NoError(t, err)
	bobBal, err := c.GetBalance(ctx, bob, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	assert.EqualValues(t, 2*LamportsPerSOL-LamportsPerSOL/2-5000, aliceBal.Value)
	assert.EqualValues(t, LamportsPerSOL/2, bobBal.Value)

	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Equal(t, []uint64{2 * LamportsPerSOL, 0, 1}, got.Meta.PreBalances)
	assert.Equal(t, []uint64{aliceBal.Value, LamportsPerSOL / 2, 1}, got.Meta.PostBalances)

	d.Advance(finalizedDepth)
	bobBal, err = c.GetBalance(ctx, bob, "")
	require.NoError(t, err)
	assert.EqualValues(t, LamportsPerSOL/2, bobBal.Value, "finalized now")
}

func TestATransferOfMoreThanTheBalanceIsAnInstructionError(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	alice, err := d.NewFundedKey(LamportsPerSOL)
	require.NoError(t, err)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{alice}, transferIx(alice.PublicKey(), solana.NewWallet().PublicKey(), 2*LamportsPerSOL))

	_, err = c.SendTransaction(ctx, tx)
	e := rpcErr(t, err)
	assert.Equal(t, `{"InstructionError":[0,{"Custom":1}]}`, errData(t, e))
	assert.Equal(t, "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1", e.Message)
	assert.Contains(t, e.Data.(map[string]any)["logs"], "Transfer: insufficient lamports 999995000, need 2000000000")

	sig, err := c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err)
	d.Advance(1)
	assert.Equal(t, `{"InstructionError":[0,{"Custom":1}]}`, jsonOf(t, status(t, c, sig).Err))
	assert.EqualValues(t, LamportsPerSOL-5000, d.Balance(alice.PublicKey()))
}

func TestATransferThatLeavesANewAccountBelowRentExemptionFails(t *testing.T) {
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, transferIx(d.Payer().PublicKey(), solana.NewWallet().PublicKey(), 1000))
	_, err := c.SendTransaction(context.Background(), tx)
	e := rpcErr(t, err)
	assert.Equal(t, `{"InsufficientFundsForRent":{"account_index":1}}`, errData(t, e))
	assert.Equal(t, "Transaction simulation failed: Transaction results in an account (1) with insufficient funds for rent", e.Message)
}

func TestAnUnfundedFeePayerIsRejected(t *testing.T) {
	_, c := startPaused(t, Options{})
	nobody, err := solana.NewRandomPrivateKey()
	require.NoError(t, err)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	_, err = c.SendTransaction(context.Background(), signed(t, bh, []solana.PrivateKey{nobody}, memoIx("hi")))
	e := rpcErr(t, err)
	assert.Equal(t, "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.", e.Message)
	assert.Equal(t, `"AccountNotFound"`, errData(t, e))
}

func TestAFeePayerThatCannotAffordTheFeeIsRejected(t *testing.T) {
	d, c := startPaused(t, Options{})
	poor, err := d.NewFundedKey(4999)
	require.NoError(t, err)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	_, err = c.SendTransaction(context.Background(), signed(t, bh, []solana.PrivateKey{poor}, memoIx("hi")))
	assert.Equal(t, `"InsufficientFundsForFee"`, errData(t, rpcErr(t, err)))
}

func TestComputeBudgetPriceAddsAPriorityFee(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()},
		computebudget.NewSetComputeUnitLimitInstruction(30_000).Build(),
		computebudget.NewSetComputeUnitPriceInstruction(250_000).Build(), // micro-lamports per CU
		memoIx("priority", solana.Meta(d.Payer().PublicKey()).SIGNER()),
	)
	sig, err := c.SendTransaction(ctx, tx)
	require.NoError(t, err)
	d.Advance(2)
	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	assert.Nil(t, got.Meta.Err)
	assert.EqualValues(t, 5000+7500, got.Meta.Fee, "5000 per signature + ceil(250000 × 30000 / 1e6)")
	assert.Contains(t, got.Meta.LogMessages, "Program ComputeBudget111111111111111111111111111111 success")
	assert.Contains(t, got.Meta.LogMessages, "Program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr consumed 13072 of 29700 compute units")

	fees, err := c.GetRecentPrioritizationFees(ctx, nil)
	require.NoError(t, err)
	require.NotEmpty(t, fees)
	var seen bool
	for _, f := range fees {
		if f.Slot == got.Slot {
			seen = true
			assert.EqualValues(t, 250_000, f.PrioritizationFee)
		}
	}
	assert.True(t, seen)
}

func TestATooSmallComputeUnitLimitExhaustsTheBudget(t *testing.T) {
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()},
		computebudget.NewSetComputeUnitLimitInstruction(1_000).Build(),
		memoIx("too big for the budget"),
	)
	_, err := c.SendTransaction(context.Background(), tx)
	assert.Equal(t, `{"InstructionError":[1,"ComputationalBudgetExceeded"]}`, errData(t, rpcErr(t, err)))
}

func TestAnUnknownProgramFailsTheTransaction(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	ix := solana.NewInstruction(solana.NewWallet().PublicKey(), nil, []byte{1, 2, 3})
	tx := signed(t, bh, []solana.PrivateKey{d.Payer()}, ix)

	_, err := c.SendTransaction(ctx, tx)
	e := rpcErr(t, err)
	assert.Equal(t, "Transaction simulation failed: Attempt to load a program that does not exist", e.Message)
	assert.Equal(t, `"ProgramAccountNotFound"`, errData(t, e))

	before := d.Balance(d.Payer().PublicKey())
	sig, err := c.SendTransactionWithOpts(ctx, tx, skipPreflight)
	require.NoError(t, err)
	d.Advance(1)
	assert.Equal(t, `"ProgramAccountNotFound"`, jsonOf(t, status(t, c, sig).Err))
	assert.Equal(t, before-5000, d.Balance(d.Payer().PublicKey()), "load failures are fee-only")
}

func TestAVersionedTransactionNeedsMaxSupportedTransactionVersion(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	tx, err := solana.NewTransaction([]solana.Instruction{memoIx("v0")}, bh, solana.TransactionPayer(d.Payer().PublicKey()))
	require.NoError(t, err)
	tx.Message.SetVersion(solana.MessageVersionV0)
	_, err = tx.Sign(func(solana.PublicKey) *solana.PrivateKey { k := d.Payer(); return &k })
	require.NoError(t, err)
	sig, err := c.SendTransaction(ctx, tx)
	require.NoError(t, err)
	d.Advance(2)

	_, err = c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Commitment: rpc.CommitmentConfirmed})
	e := rpcErr(t, err)
	assert.Equal(t, -32015, e.Code)
	got, err := c.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{
		Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: ptr(uint64(0)),
	})
	require.NoError(t, err)
	assert.Equal(t, rpc.TransactionVersion(0), got.Version)
	assert.Nil(t, got.Meta.Err)
}

func TestGetSignaturesForAddressPagesNewestFirst(t *testing.T) {
	ctx := context.Background()
	d, c := startPaused(t, Options{})
	author, err := d.NewFundedKey(LamportsPerSOL)
	require.NoError(t, err)
	var sigs []solana.Signature // oldest first
	for i := range 5 {
		bh, _ := blockhash(t, c, rpc.CommitmentProcessed)
		tx := signed(t, bh, []solana.PrivateKey{author}, memoIx(string(rune('a'+i))+"-memo"))
		sig, err := c.SendTransactionWithOpts(ctx, tx, processedPreflight())
		require.NoError(t, err)
		sigs = append(sigs, sig)
		if i != 2 { // two land in the same block
			d.Advance(1)
		}
	}
	d.Advance(1)

	_, err = c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{Commitment: rpc.CommitmentProcessed})
	assert.Equal(t, "Method does not support commitment below `confirmed`", rpcErr(t, err).Message)

	all, err := c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	require.Len(t, all, 5)
	for i, s := range all {
		assert.Equal(t, sigs[4-i], s.Signature, "newest first")
	}
	require.NotNil(t, all[0].Memo)
	assert.Equal(t, "[6] e-memo", *all[0].Memo)
	assert.Equal(t, rpc.ConfirmationStatusConfirmed, all[0].ConfirmationStatus)
	assert.NotNil(t, all[0].BlockTime)

	page1, err := c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{
		Limit: ptr(2), Commitment: rpc.CommitmentConfirmed,
	})
	require.NoError(t, err)
	require.Len(t, page1, 2)
	assert.Equal(t, []solana.Signature{sigs[4], sigs[3]}, []solana.Signature{page1[0].Signature, page1[1].Signature})
	page2, err := c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{
		Limit: ptr(2), Before: page1[1].Signature, Commitment: rpc.CommitmentConfirmed,
	})
	require.NoError(t, err)
	assert.Equal(t, []solana.Signature{sigs[2], sigs[1]}, []solana.Signature{page2[0].Signature, page2[1].Signature})
	untilOldest, err := c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{
		Until: sigs[1], Commitment: rpc.CommitmentConfirmed,
	})
	require.NoError(t, err)
	assert.Len(t, untilOldest, 3, "until is exclusive")

	finalizedOnly, err := c.GetSignaturesForAddress(ctx, author.PublicKey())
	require.NoError(t, err)
	assert.Empty(t, finalizedOnly, "the default commitment is finalized")

	_, err = c.GetSignaturesForAddressWithOpts(ctx, author.PublicKey(), &rpc.GetSignaturesForAddressOpts{Limit: ptr(1001)})
	assert.Equal(t, "Invalid limit; max 1000", rpcErr(t, err).Message)
}
